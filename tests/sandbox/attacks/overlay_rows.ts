/**
 * Attacks on what an environment's root adds (issue 14; rows O1–O5, proposed for ATTACKS.md
 * §4.1): the user's own upper layer, written by the sandbox, read back by later sandboxes and
 * kept on the host.
 * @module
 */
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../../assert.ts";
import type { exec as execFn } from "../../../src/sandbox/mod.ts";
import { SandboxSetupError } from "../../../src/sandbox/mod.ts";
import { sandboxTest, withWorkspace } from "../harness.ts";
import {
  assertUpperInert,
  sharedBase,
  type TestEnvironment,
  testEnvironment,
} from "../environment_fixture.ts";

const HOST_PYTHON = "/usr/bin/python3";
const hasPython = (() => {
  try {
    return Deno.statSync(HOST_PYTHON).isFile;
  } catch {
    return false;
  }
})();

async function withEnvironment(fn: (env: TestEnvironment, ws: string) => Promise<void>) {
  const env = await testEnvironment(sharedBase());
  try {
    await withWorkspace((ws) => fn(env, ws));
  } finally {
    await env.dispose();
  }
}

/** Declares the O rows; `exec` is the library's. */
export function overlayRows(exec: typeof execFn): void {
  sandboxTest("§4.10 O1: the upper plants a set-id file (image lower) — refused", async () => {
    await withEnvironment(async (env, workspace) => {
      const rootfs = env.rootfs("mallory");
      const r = await exec({ workspace, rootfs }, [
        "sh",
        "-c",
        "cp /usr/bin/sh /usr/bin/s; chmod 4755 /usr/bin/s; echo u=$?; " +
        "chmod 2755 /usr/bin/s; echo g=$?; mkdir -m 2777 /var/d; echo d=$?",
      ]);
      assertMatch(r.stdout, /u=1\ng=1\nd=1\n/);
      assertMatch(r.stderr, /Operation not permitted/);
      assertUpperInert(rootfs.upper);
    });
  });

  sandboxTest("§4.10 O2: a symlink in the upper to a host path resolves inside", async () => {
    await withEnvironment(async (env, workspace) => {
      const canaryDir = await Deno.makeTempDir({ prefix: "coop-canary-" });
      try {
        await Deno.chmod(canaryDir, 0o755);
        const secret = `O2-${crypto.randomUUID()}`;
        await Deno.writeTextFile(`${canaryDir}/secret`, secret);
        const rootfs = env.rootfs("mallory");
        const plant = await exec({ workspace, rootfs }, [
          "sh",
          "-c",
          `ln -s ${canaryDir}/secret /var/leak && ln -s ${canaryDir} /root/.cache && ` +
          `ln -sf ${canaryDir}/secret /etc/os-release && echo planted`,
        ]);
        assertEquals(plant.stdout, "planted\n");
        // A later sandbox over the same upper: the links lead into its own view only.
        const read = await exec({ workspace, rootfs }, [
          "sh",
          "-c",
          "cat /var/leak /etc/os-release 2>&1; echo x > /var/leak; echo w=$?",
        ]);
        assertNotIncludes(read.stdout, secret);
        assertMatch(read.stdout, /No such file/);
        assertEquals(await Deno.readTextFile(`${canaryDir}/secret`), secret);
        // A persist bind onto the planted link is refused, not followed.
        const persist = [{ source: `${env.dir}/persist/mallory`, target: "/root/.cache" }];
        const error = await exec({ workspace, rootfs, persist }, ["true"]).then(
          () => null,
          (e: unknown) => e,
        );
        assert(error instanceof SandboxSetupError, String(error));
        assertEquals([error.step, error.errno], ["persist", 40 /* ELOOP */]);
        assertEquals([...Deno.readDirSync(canaryDir)].map((e) => e.name), ["secret"]);
      } finally {
        await Deno.remove(canaryDir, { recursive: true });
      }
    });
  });

  sandboxTest("§4.10 O3: whiteout and opaque-directory tricks — EPERM", async () => {
    await withEnvironment(async (env, workspace) => {
      const rootfs = env.rootfs("mallory");
      const r = await exec({ workspace, rootfs }, [
        "sh",
        "-c",
        // A whiteout of its own (hiding a base file) or anywhere: refused by Landlock (no
        // MAKE_CHAR right: EACCES) before the missing CAP_MKNOD and nodev would (EPERM).
        "mknod /usr/bin/.wh.cat c 0 0; echo c=$?; mknod /var/w c 0 0; echo w=$?; " +
        "cat /etc/os-release",
      ]);
      assertMatch(r.stdout, /^c=1\nw=1\nID=coop-mini/);
      assertEquals(r.stderr.match(/Permission denied|Operation not permitted/g)?.length, 2);
      assertUpperInert(rootfs.upper);
    });
  });

  sandboxTest({
    name: `§4.10 O3b: setting overlayfs's own xattrs (opaque, redirect) from inside — refused${
      hasPython ? "" : " — skipped: needs /usr/bin/python3"
    }`,
    ignore: !hasPython,
  }, async () => {
    await withEnvironment(async (env, workspace) => {
      const rootfs = env.rootfs("mallory", "host");
      const r = await exec({ workspace, rootfs }, [
        "python3",
        "-c",
        [
          "import os, errno",
          "for name in ('user.overlay.opaque', 'user.overlay.redirect', 'trusted.overlay.opaque'):",
          "    try:",
          "        os.setxattr('/usr/local/share', name, b'y'); print(name, 'OK')",
          "    except OSError as e: print(name, errno.errorcode[e.errno])",
        ].join("\n"),
      ]);
      // Refused, or — kernels since 6.7 escape overlayfs's own names — stored in the upper as
      // user.overlay.overlay.*, which this overlay never interprets: never the real marker.
      assertEquals(r.stdout.trim().split("\n").length, 3, r.stdout + r.stderr);
      const upperDir = `${rootfs.upper}/usr/local/share`;
      const xattrs = new Deno.Command(HOST_PYTHON, {
        args: ["-c", "import os, sys; print(os.listxattr(sys.argv[1]))", upperDir],
      }).outputSync();
      const names = new TextDecoder().decode(xattrs.stdout);
      assertNotIncludes(names, "'user.overlay.opaque'");
      assertNotIncludes(names, "'user.overlay.redirect'");
      assertNotIncludes(names, "'trusted.overlay.");
      // Still merged: the host's entries show through in a later sandbox.
      const hostEntries = [...Deno.readDirSync("/usr/local/share")].map((e) => e.name).sort();
      const later = await exec({ workspace, rootfs }, ["ls", "/usr/local/share"]);
      for (const name of hostEntries) assert(later.stdout.split("\n").includes(name), name);
    });
  });

  sandboxTest("§4.10 O4: mounting or remounting the overlay from inside — EPERM", async () => {
    await withEnvironment(async (env, workspace) => {
      const rootfs = env.rootfs("mallory");
      const r = await exec({ workspace, rootfs }, [
        "sh",
        "-c",
        "mount -o remount,rw /usr; echo a=$?; mount -o remount,suid /usr; echo b=$?; " +
        "umount -l /usr; echo c=$?; mkdir -p /var/m; " +
        "mount -t overlay o -o lowerdir=/usr,upperdir=/var/u,workdir=/var/w /var/m; echo d=$?; " +
        "ls /usr/bin/sh",
      ]);
      assertMatch(r.stdout, /^a=(1|32)\nb=(1|32)\nc=(1|32)\nd=(1|32)\n\/usr\/bin\/sh\n$/);
      assertMatch(r.stderr, /permission denied|Operation not permitted|must be superuser/i);
    });
  });

  sandboxTest("§4.10 O5: another user's upper is absent", async () => {
    await withEnvironment(async (env, workspace) => {
      const marker = `carol-${crypto.randomUUID()}`;
      const carol = await exec({ workspace, rootfs: env.rootfs("carol") }, [
        "sh",
        "-c",
        `echo ${marker} > /var/${marker} && echo ok`,
      ]);
      assertEquals(carol.stdout, "ok\n");
      const bob = await exec({ workspace, rootfs: env.rootfs("bob") }, [
        "sh",
        "-c",
        `ls /var; cat /var/${marker}; ls ${env.dir} ${env.dir}/uppers/carol 2>&1; ` +
        "grep -rl carol- /usr /var /etc /root 2>/dev/null; echo done",
      ]);
      assertNotIncludes(bob.stdout.replace(/No such file[^\n]*/g, ""), marker);
      assertMatch(bob.stdout, /No such file/);
      assertMatch(bob.stdout, /done\n$/);
    });
  });
}
