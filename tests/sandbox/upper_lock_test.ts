// One sandbox at a time on an environment's upper layer, whichever process asks
// (src/sandbox/upper_lock.ts): overlayfs gives undefined results when one upper is in two mounts
// at once, and a gateway's own queue cannot see `coop run` or `coop shell` in another process.
import { dirname } from "node:path";
import { assert, assertEquals, assertRejects, assertThrows } from "../assert.ts";
import { removeLayerDir, upperLocker } from "../../src/environments/layer_removal.ts";
import { exec, SandboxUpperInUseError, startSession } from "../../src/sandbox/mod.ts";
import { loadTrampoline } from "../../src/sandbox/ffi.ts";
import { tryLockUpper } from "../../src/sandbox/upper_lock.ts";
import { sandboxTest, startScript, until, withWorkspace } from "./harness.ts";
import { testEnvironment } from "./environment_fixture.ts";

const CHILD = new URL("./upper_lock_child.ts", import.meta.url).pathname;

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

sandboxTest(
  "a sandbox of another process on the same upper: this one waits until that one has ended",
  async () => {
    const env = await testEnvironment();
    try {
      await withWorkspace(async (workspace) => {
        const policy = { workspace, rootfs: env.rootfs("bob", "host") };
        const other = startScript(CHILD, [
          "exec",
          JSON.stringify(policy),
          "touch /work/started; sleep 1; echo mine > /usr/owner; touch /work/ended",
        ]);
        assert(
          await until(() => exists(`${workspace}/started`), 30_000),
          "the other process's command started",
        );
        // Without the lock this would mount the upper a second time, at once.
        const r = await exec(policy, [
          "sh",
          "-c",
          "test -e /work/ended && cat /usr/owner || echo overlapped",
        ]);
        assertEquals(r.stdout, "mine\n", r.stderr);
        const { first, process } = await other;
        assertEquals(JSON.parse(first).exitCode, 0);
        await process.status;
      });
    } finally {
      await env.dispose();
    }
  },
);

sandboxTest(
  "a live session holds its upper: another sandbox on it fails after its wait, naming the holder",
  async () => {
    const env = await testEnvironment();
    try {
      await withWorkspace(async (workspace) => {
        const policy = { workspace, rootfs: env.rootfs("bob", "host") };
        const session = await startSession(policy);
        try {
          const error = await assertRejects(
            () => exec(policy, ["sh", "-c", "true"], { upperWaitMs: 300 }),
            SandboxUpperInUseError,
          );
          assertEquals(error.holderPid, Deno.pid);
          assert(error.message.includes("another sandbox of this process"), error.message);
          assertEquals(error.code, "sandbox.upper_in_use");
          // A sandbox on another person's upper is not held up.
          const carol = await exec({ workspace, rootfs: env.rootfs("carol", "host") }, [
            "sh",
            "-c",
            "true",
          ]);
          assertEquals(carol.exitCode, 0);
        } finally {
          await session.stop();
        }
        const after = await exec(policy, ["sh", "-c", "true"], { upperWaitMs: 300 });
        assertEquals(after.exitCode, 0, "free again once the session has ended");
      });
    } finally {
      await env.dispose();
    }
  },
);

sandboxTest("a holder that is killed releases the upper with its sandbox", async () => {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const policy = { workspace, rootfs: env.rootfs("bob", "host") };
      const holder = await startScript(CHILD, ["session", JSON.stringify(policy)]);
      assertEquals(holder.first, "ready");
      const refused = await assertRejects(
        () => exec(policy, ["sh", "-c", "true"], { upperWaitMs: 200 }),
        SandboxUpperInUseError,
      );
      assertEquals(refused.holderPid, holder.process.pid, "the message names the other process");
      holder.process.kill("SIGKILL");
      await holder.process.status;
      const r = await exec(policy, ["sh", "-c", "echo ok > /usr/after && cat /usr/after"]);
      assertEquals(r.stdout, "ok\n", r.stderr);
    });
  } finally {
    await env.dispose();
  }
});

sandboxTest(
  "reset while a sandbox has the upper mounted: refused, nothing removed; afterwards it goes",
  async () => {
    const env = await testEnvironment();
    try {
      await withWorkspace(async (workspace) => {
        const bob = env.rootfs("bob", "host");
        const layers = dirname(bob.upper);
        const lock = await upperLocker();
        const session = await startSession({ workspace, rootfs: bob });
        try {
          const wrote = await session.exec(["sh", "-c", "echo kept > /usr/kept"]);
          assertEquals(wrote.exitCode, 0, wrote.stderr);
          assertThrows(() => removeLayerDir(layers, lock, true), SandboxUpperInUseError);
          assert(exists(`${bob.upper}/usr/kept`), "nothing was removed under the live sandbox");
        } finally {
          await session.stop();
        }
        const freed = removeLayerDir(layers, lock, true);
        assert(freed.entries > 0);
        assert(!exists(bob.upper), "the upper is gone");
        assert(exists(`${bob.upper}.lock`), "its lock file stays, for whoever waits on it");
        const r = await exec({ workspace, rootfs: bob }, ["sh", "-c", "cat /usr/kept 2>&1; true"]);
        assert(r.stdout.includes("No such file"), "the next sandbox starts from an empty upper");
      });
    } finally {
      await env.dispose();
    }
  },
);

sandboxTest(
  "cancelled while it waits for the upper: it ends at once with the cancel, and never runs",
  async () => {
    const env = await testEnvironment();
    try {
      await withWorkspace(async (workspace) => {
        const bob = env.rootfs("bob", "host");
        // Taken directly, as a layer removal takes it, before bob's upper exists: the library
        // makes the upper right before it waits for the lock, which shows when it waits.
        Deno.mkdirSync(dirname(bob.upper), { recursive: true, mode: 0o711 });
        const held = tryLockUpper(await loadTrampoline(), bob.upper);
        assert(held, "the upper's lock was free");
        const cancel = new AbortController();
        const reason = new Error("the turn was stopped");
        try {
          const running = exec({ workspace, rootfs: bob }, ["sh", "-c", "touch /work/ran"], {
            signal: cancel.signal,
            upperWaitMs: 20_000,
          });
          assert(await until(() => exists(bob.upper), 30_000), "the sandbox reached the lock");
          const aborted = performance.now();
          cancel.abort(reason);
          const error = await running.then(() => null, (e: unknown) => e);
          const tookMs = performance.now() - aborted;
          assertEquals(error, reason, "rejected with the cancel's reason, nothing else");
          assert(tookMs < 5_000, `ended ${Math.round(tookMs)} ms after the cancel, not at once`);
        } finally {
          held.release();
        }
        // A waiter left behind would take the lock now that it is free, and run.
        const next = await exec({ workspace, rootfs: bob }, [
          "sh",
          "-c",
          "test -e /work/ran && echo ran || echo no",
        ]);
        assertEquals(next.stdout, "no\n", next.stderr);
        assert(!exists(`${workspace}/ran`), "the cancelled command never ran");
      });
    } finally {
      await env.dispose();
    }
  },
);
