// An environment's overlay is mounted once and held for the next sandboxes of its upper
// (src/sandbox/held_overlay.ts). Consecutive commands share one superblock (seen from inside:
// the device number of their /usr; from the host: one work directory), and stop sharing it
// whenever the upper may have been changed by anything else — a layer removed, another
// process's sandbox, a rebuilt base, a sandbox that failed to set up — or is someone else's:
// then the next command sees the upper as it is, not as a held mount's caches remember it.
// (A new superblock may get a freed one's device number, so a new mount is told by its work
// directory.)
import { assert, assertEquals, assertNotEquals } from "../assert.ts";
import { exec, type SandboxPolicyInput } from "../../src/sandbox/mod.ts";
import { loadTrampoline } from "../../src/sandbox/ffi.ts";
import { dropHeldOverlays, heldOverlayCount } from "../../src/sandbox/held_overlay.ts";
import { tryLockUpper } from "../../src/sandbox/upper_lock.ts";
import { upperSyncsSettled } from "../../src/sandbox/upper_sync.ts";
import { workdirRemovalsSettled } from "../../src/sandbox/overlay_workdir.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";
import { type OverlayRoot, testEnvironment } from "./environment_fixture.ts";

const CHILD = new URL("./upper_lock_child.ts", import.meta.url).pathname;

/** Runs `command` in `policy`; returns its stdout, failing the test on a non-zero exit. */
async function run(policy: SandboxPolicyInput, command: string): Promise<string> {
  const r = await exec(policy, ["sh", "-c", command]);
  assertEquals(r.exitCode, 0, `${command}: ${r.stderr}`);
  return r.stdout.trim();
}

/** The device of /usr inside: one per overlay superblock alive. */
const device = (policy: SandboxPolicyInput) => run(policy, "stat -c %d /usr");

/** The work directories of `bob`'s overlays left once removals settled: the held one's. */
async function workdirs(bob: OverlayRoot): Promise<string[]> {
  await workdirRemovalsSettled();
  return [...Deno.readDirSync(bob.work)].map((e) => e.name).sort();
}

async function withBob(
  fn: (policy: SandboxPolicyInput, bob: OverlayRoot, base: string) => Promise<void>,
): Promise<void> {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const bob = env.rootfs("bob");
      dropHeldOverlays();
      await fn({ workspace, rootfs: bob }, bob, env.base);
    });
  } finally {
    dropHeldOverlays();
    await upperSyncsSettled();
    await env.dispose();
  }
}

sandboxTest(
  "the next command of an upper clones the held overlay and sees the last one's files",
  async () => {
    await withBob(async (policy, bob) => {
      const first = await device(policy);
      await run(policy, "echo 1 > /usr/note");
      assertEquals(heldOverlayCount(), 1);
      for (let i = 0; i < 3; i++) assertEquals(await device(policy), first, "one superblock");
      assertEquals(await run(policy, "cat /usr/note"), "1");
      // Its one work directory, not one per command.
      assertEquals([...Deno.readDirSync(bob.work)].length, 1);
    });
  },
);

sandboxTest("the held overlay is in no mount tree of the host", async () => {
  await withBob(async (policy, bob) => {
    await run(policy, "echo 1 > /usr/note");
    assertEquals(heldOverlayCount(), 1);
    // This process's mount table (the host's namespace): no overlay, nothing under bob's layers.
    const mounts = Deno.readTextFileSync("/proc/self/mountinfo");
    assert(!/ - overlay /.test(mounts), mounts);
    assert(!mounts.includes(bob.upper) && !mounts.includes(bob.work), mounts);
  });
});

sandboxTest("someone else's upper never gets bob's held overlay", async () => {
  await withBob(async (policy) => {
    await run(policy, "echo bob > /usr/mine");
    const env = await testEnvironment();
    try {
      const carol = { ...policy, rootfs: env.rootfs("carol") };
      assertNotEquals(await device(carol), await device(policy));
      assertEquals(await run(carol, "test -e /usr/mine || echo absent"), "absent");
    } finally {
      await env.dispose();
    }
  });
});

sandboxTest("a layer removed between two commands: the next one mounts afresh", async () => {
  await withBob(async (policy, bob) => {
    await run(policy, "echo x > /usr/doomed");
    const before = await workdirs(bob);
    // What `coop sandbox reset` does, under the upper's lock.
    const lib = await loadTrampoline();
    const lock = tryLockUpper(lib, bob.upper);
    assert(lock, "the upper's lock is free between commands");
    try {
      for (const entry of Deno.readDirSync(bob.upper)) {
        await Deno.remove(`${bob.upper}/${entry.name}`, { recursive: true });
      }
    } finally {
      lock.release();
    }
    assertEquals(await run(policy, "test -e /usr/doomed || echo gone"), "gone");
    assertNotEquals(await workdirs(bob), before, "a new overlay");
  });
});

sandboxTest(
  "another process's sandbox on the upper since: the held overlay is not given out",
  async () => {
    await withBob(async (policy, bob) => {
      await run(policy, "echo x > /usr/shared");
      const before = await workdirs(bob);
      // `coop run --user bob -- rm /usr/shared`, say: another process, its own overlay.
      const out = await new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          "--allow-all",
          "--no-prompt",
          CHILD,
          "exec",
          JSON.stringify(policy),
          "rm /usr/shared",
        ],
        stderr: "inherit",
      }).output();
      assertEquals(JSON.parse(new TextDecoder().decode(out.stdout)).exitCode, 0);
      // A held superblock would still have /usr/shared in its caches.
      assertEquals(await run(policy, "test -e /usr/shared || echo gone"), "gone");
      assertNotEquals(await workdirs(bob), before, "a new overlay");
    });
  },
);

sandboxTest(
  "a rebuilt base (another lower directory at the same path): a new overlay",
  async () => {
    await withBob(async (policy, bob, base) => {
      await run(policy, ":");
      const before = await workdirs(bob);
      // `coop rebuild` renames the new base into place (src/environments/base_builder.ts).
      await Deno.rename(base, `${base}.old`);
      await new Deno.Command("cp", { args: ["-a", `${base}.old`, base] }).output();
      await Deno.writeTextFile(`${base}/usr/rebuilt`, "yes\n");
      try {
        assertEquals(await run(policy, "cat /usr/rebuilt"), "yes");
        assertNotEquals(await workdirs(bob), before, "a new overlay");
      } finally {
        await Deno.remove(`${base}.old`, { recursive: true });
      }
    });
  },
);

sandboxTest("a sandbox that fails to set up on a held overlay drops it", async () => {
  await withBob(async (policy, bob) => {
    await run(policy, ":");
    const before = await workdirs(bob);
    const failed = await exec(policy, ["true"], { failAt: "landlock" }).then(
      () => "ran",
      (error) => (error as { step?: string }).step,
    );
    assertEquals(failed, "landlock");
    assertEquals(heldOverlayCount(), 0);
    await run(policy, ":");
    assertNotEquals(await workdirs(bob), before, "a new overlay");
  });
});
