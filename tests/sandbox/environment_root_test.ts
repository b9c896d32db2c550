// Environment roots (issue 14 item 3): an overlay of a base under a user's upper, the host's
// /usr under an upper, a directory root, persist binds — what persists, for whom, and what
// never changes on the host.
import { assert, assertEquals, assertMatch, assertThrows } from "../assert.ts";
import { exec, resolvePolicy, SandboxPolicyError } from "../../src/sandbox/mod.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";
import { testEnvironment } from "./environment_fixture.ts";

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

sandboxTest("an image root: a write under /usr lands in that user's upper only", async () => {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const bob = env.rootfs("bob");
      const write = await exec({ workspace, rootfs: bob }, [
        "sh",
        "-c",
        "cat /etc/os-release && echo from-bob > /usr/bin/tool && mkdir -p /var/lib/x && " +
        "rm /usr/bin/echo && echo ok",
      ]);
      assertEquals(write.stderr, "");
      assertMatch(write.stdout, /ID=coop-mini[\s\S]*ok\n$/);
      assertEquals(await Deno.readTextFile(`${bob.upper}/usr/bin/tool`), "from-bob\n");
      // The base is unchanged: no new file, the removed one still there.
      assert(!(await exists(`${env.base}/usr/bin/tool`)));
      assert(await exists(`${env.base}/usr/bin/echo`));

      const again = await exec({ workspace, rootfs: bob }, [
        "sh",
        "-c",
        "cat /usr/bin/tool; ls /var/lib; ls /usr/bin/echo 2>&1",
      ]);
      assertMatch(again.stdout, /^from-bob\nx\n.*No such file/);

      const carol = await exec({ workspace, rootfs: env.rootfs("carol") }, [
        "sh",
        "-c",
        "cat /usr/bin/tool 2>&1; ls /usr/bin/echo",
      ]);
      assertMatch(carol.stdout, /No such file[\s\S]*\/usr\/bin\/echo\n$/);
    });
  } finally {
    await env.dispose();
  }
});

sandboxTest("the host lower: /usr/local takes new files, host /usr is unchanged", async () => {
  const env = await testEnvironment();
  const name = `coop-overlay-${crypto.randomUUID()}`;
  try {
    await withWorkspace(async (workspace) => {
      const bob = env.rootfs("bob", "host");
      const r = await exec({ workspace, rootfs: bob }, [
        "sh",
        "-c",
        `echo mine > /usr/local/bin/${name} && cat /usr/local/bin/${name}; ` +
        // Host files keep their host owner, which the sandbox has no id for: read-only.
        "echo x >> /usr/bin/sh; echo edit=$?",
      ]);
      assertMatch(r.stdout, /^mine\nedit=[12]\n$/);
      assert(!(await exists(`/usr/local/bin/${name}`)), "the host's /usr is unchanged");
      assertEquals(await Deno.readTextFile(`${bob.upper}/usr/local/bin/${name}`), "mine\n");
      const next = await exec({ workspace, rootfs: bob }, ["cat", `/usr/local/bin/${name}`]);
      assertEquals(next.stdout, "mine\n");
      const carol = await exec({ workspace, rootfs: env.rootfs("carol", "host") }, [
        "ls",
        `/usr/local/bin/${name}`,
      ]);
      assert(carol.exitCode !== 0);
    });
  } finally {
    await env.dispose();
  }
});

sandboxTest("a directory root is read-write as / (the build sandbox)", async () => {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const r = await exec({ workspace, rootfs: { directory: env.base } }, [
        "sh",
        "-c",
        "echo built > /etc/built && cat /etc/hostname && ls /work /tmp /proc/self/fd >/dev/null",
      ]);
      assertEquals(r.stderr, "");
      assertEquals(r.stdout, "coop\n");
      assertEquals(await Deno.readTextFile(`${env.base}/etc/built`), "built\n");
    });
  } finally {
    await env.dispose();
  }
});

sandboxTest("persist binds survive and are per source; COOP_ variables are set", async () => {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const persist = (user: string) => [{
        source: `${env.dir}/persist/${user}/0`,
        target: "/root/.cache",
      }];
      const policy = { workspace, rootfs: env.rootfs("bob"), persist: persist("bob") };
      const first = await exec(policy, [
        "sh",
        "-c",
        'echo kept > /root/.cache/f; echo "$COOP_WORKSPACE $COOP_CREATED"',
      ]);
      assertMatch(first.stdout, /^\/work \d{4}-\d\d-\d\dT[\d:.]+Z\n$/);
      assertEquals(await Deno.readTextFile(`${env.dir}/persist/bob/0/f`), "kept\n");
      // Not in the upper: the bind sits above it.
      assert(!(await exists(`${env.rootfs("bob").upper}/root/.cache/f`)));
      const again = await exec(policy, ["cat", "/root/.cache/f"]);
      assertEquals(again.stdout, "kept\n");
      const carol = await exec(
        { workspace, rootfs: env.rootfs("carol"), persist: persist("carol") },
        ["ls", "/root/.cache"],
      );
      assertEquals(carol.stdout, "");
      assertEquals(carol.exitCode, 0);
    });
  } finally {
    await env.dispose();
  }
});

sandboxTest("an upper whose path holds a symlink is refused before anything starts", async () => {
  const env = await testEnvironment();
  try {
    await Deno.mkdir(`${env.dir}/real`);
    await Deno.symlink(`${env.dir}/real`, `${env.dir}/link`);
    await withWorkspace(async (workspace) => {
      const rootfs = { lower: env.base, upper: `${env.dir}/link/upper`, work: `${env.dir}/w` };
      const error = await exec({ workspace, rootfs }, ["true"]).then(
        () => null,
        (e: unknown) => e,
      );
      assert(error instanceof SandboxPolicyError);
      assertMatch(error.message, /rootfs\.upper: .* holds a symlink at ".*\/link"/);
    });
  } finally {
    await env.dispose();
  }
});

Deno.test("rootfs and persist are validated with messages that name the problem", () => {
  const bad = (input: Record<string, unknown>, message: RegExp) => {
    const error = assertThrows(
      () => resolvePolicy({ workspace: "/w", ...input }),
      SandboxPolicyError,
    );
    assertMatch(error.message, message);
  };
  bad(
    { rootfs: { lower: "base", upper: "/u", work: "/w2" } },
    /rootfs\.lower: the lower layer must be an absolute path/,
  );
  bad({ rootfs: { lower: "/b", upper: "/x/../u", work: "/w2" } }, /must not contain "\.\."/);
  bad({ rootfs: { lower: "/b", upper: "/u", work: "/u/work" } }, /rootfs\.work: must not be/);
  bad({ rootfs: { lower: "/b", upper: "/u:x", work: "/w2" } }, /comma, colon/);
  bad({ rootfs: { lower: "/b" } }, /rootfs/);
  for (const target of ["/proc/x", "/dev", "/work/cache", "/tmp/a", "/sys"]) {
    bad({ persist: [{ source: "/s", target }] }, /persist\.0\.target: must not be \//);
  }
  bad(
    { persist: [{ source: "s", target: "/root/c" }] },
    /persist\.0\.source: the persist source must be an absolute path/,
  );
  bad(
    { rootfs: { directory: "/b" }, readOnlyPaths: ["/opt"] },
    /readOnlyPaths: cannot be combined/,
  );
  const ok = resolvePolicy({
    workspace: "/w",
    rootfs: { lower: "host", upper: "/u", work: "/w2" },
    persist: [{ source: "/s", target: "/root/.cache" }],
  });
  assertEquals(ok.persist.length, 1);
});
