// Work directories off the command's path (src/sandbox/overlay_workdir.ts): each sandbox takes
// one made ahead after the last ended; those of ended sandboxes go once the process idles, and
// never more than REMOVAL_BATCH wait for that; a gateway that dies leaves nothing the next
// one's sweep misses; an image's tree, staged over the work directory, is not seen inside.
// These are the sandboxes that mount an overlay of their own: with holding off, every one does
// (held overlays: held_overlay_test.ts).
import { assert, assertEquals } from "../assert.ts";
import { readdirSync } from "node:fs";
import { exec, startSession, sweepDeadSandboxCgroups } from "../../src/sandbox/mod.ts";
import {
  IDLE_MS,
  POOL_SIZE,
  REMOVAL_BATCH,
  workdirRemovalsSettled,
  workdirsWaiting,
} from "../../src/sandbox/overlay_workdir.ts";
import { upperSyncsSettled } from "../../src/sandbox/upper_sync.ts";
import { dropHeldOverlays } from "../../src/sandbox/held_overlay.ts";
import { sandboxTest, until, withWorkspace } from "./harness.ts";
import { testEnvironment } from "./environment_fixture.ts";

const names = (dir: string) => readdirSync(dir).sort();

/** A sandbox test with no overlay held: each sandbox mounts its own over a fresh directory. */
function poolTest(name: string, fn: () => Promise<void>): void {
  sandboxTest(name, async () => {
    dropHeldOverlays(false);
    try {
      await fn();
    } finally {
      dropHeldOverlays(true);
    }
  });
}

/** Waits until `work` holds just pooled directories (`count`, or at most a full pool). */
async function onlyPool(work: string, count?: number): Promise<string[]> {
  const settled = await until(() => {
    const left = names(work).length;
    return workdirsWaiting() === 0 && (count === undefined ? left <= POOL_SIZE : left === count);
  }, 10_000);
  assert(settled, `expected ${count ?? `≤ ${POOL_SIZE}`} pooled, found ${names(work).join(" ")}`);
  return names(work);
}

poolTest(
  "a sandbox takes its work directory from the pool made after the last one",
  async () => {
    const env = await testEnvironment();
    try {
      await withWorkspace(async (workspace) => {
        const bob = env.rootfs("bob");
        assertEquals((await exec({ workspace, rootfs: bob }, ["sh", "-c", ":"])).exitCode, 0);
        const pooled = await onlyPool(bob.work, POOL_SIZE);
        assertEquals((await exec({ workspace, rootfs: bob }, ["sh", "-c", ":"])).exitCode, 0);
        // One pooled directory was used (and removed once idle); nothing new was made.
        const after = await onlyPool(bob.work, POOL_SIZE - 1);
        assert(after.every((name) => pooled.includes(name)), `${pooled} then ${after}`);
        await workdirRemovalsSettled();
        assertEquals(names(bob.work), [], "settled: the pool is removed too");
      });
    } finally {
      await upperSyncsSettled();
      await env.dispose();
    }
  },
);

poolTest("ended sandboxes' work directories go once the process idles", async () => {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const bob = env.rootfs("bob");
      for (let i = 0; i < 5; i++) {
        assertEquals((await exec({ workspace, rootfs: bob }, ["sh", "-c", ":"])).exitCode, 0);
      }
      // Nobody awaits anything here: the idle timer sends them to the worker by itself.
      await new Promise((resolve) => setTimeout(resolve, IDLE_MS));
      await onlyPool(bob.work);
      await workdirRemovalsSettled();
    });
  } finally {
    await upperSyncsSettled();
    await env.dispose();
  }
});

poolTest(`never idle, never more than ${REMOVAL_BATCH} wait for removal`, async () => {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const bob = env.rootfs("bob");
      // A live session holds a work directory throughout: the process never idles.
      const session = await startSession({ workspace, rootfs: env.rootfs("carol") });
      try {
        let most = 0;
        for (let i = 0; i < 2 * REMOVAL_BATCH + 3; i++) {
          assertEquals((await exec({ workspace, rootfs: bob }, ["sh", "-c", ":"])).exitCode, 0);
          most = Math.max(most, workdirsWaiting());
        }
        assert(most < REMOVAL_BATCH, `${most} waited`);
        const bound = POOL_SIZE + REMOVAL_BATCH;
        const removed = await until(() => names(bob.work).length <= bound, 10_000);
        assert(removed, `${names(bob.work).length} directories left, more than ${bound}`);
      } finally {
        await session.stop();
      }
      await workdirRemovalsSettled();
      assertEquals(names(bob.work), []);
    });
  } finally {
    await upperSyncsSettled();
    await env.dispose();
  }
});

poolTest(
  "a gateway killed with a full pool leaves nothing the next one's sweep misses",
  async () => {
    const env = await testEnvironment();
    try {
      await withWorkspace(async (workspace) => {
        const bob = env.rootfs("bob");
        const policy = JSON.stringify({ workspace, rootfs: bob });
        const mod = JSON.stringify(new URL("../../src/sandbox/mod.ts", import.meta.url).href);
        // One command, then SIGKILL once its pool is made: nothing of it is awaited or removed.
        const held = JSON.stringify(
          new URL("../../src/sandbox/held_overlay.ts", import.meta.url).href,
        );
        // Holding off there too, as in this process (poolTest): a held overlay keeps its
        // sandbox's directory, and the pool would show only when it is dropped, 30 s later.
        const script = `
        import { exec } from ${mod};
        import { dropHeldOverlays } from ${held};
        dropHeldOverlays(false);
        const policy = ${policy};
        await exec(policy, ["sh", "-c", ":"]);
        while ([...Deno.readDirSync(policy.rootfs.work)].length < ${POOL_SIZE}) {
          await new Promise((resolve) => setTimeout(resolve, 10));
        }
        console.log(Deno.pid);
        Deno.kill(Deno.pid, "SIGKILL");
      `;
        const child = await new Deno.Command(Deno.execPath(), {
          args: ["eval", "--quiet", script],
          stdout: "piped",
          stderr: "piped",
        }).output();
        assertEquals(child.signal, "SIGKILL", new TextDecoder().decode(child.stderr));
        const left = names(bob.work);
        // Its pool, and its ended sandbox's directory unless the idle removal came first.
        assert(left.length >= POOL_SIZE, left.join(" "));
        assertEquals((await exec({ workspace, rootfs: bob }, ["sh", "-c", ":"])).exitCode, 0);
        await workdirRemovalsSettled();
        assertEquals(names(bob.work), []);
        // Where it had cgroups (its idle init's, made ahead), the sweep `coop start` runs
        // removes them too; left, they piled up over CI runs on this machine (hundreds).
        const dead = `/coop-${new TextDecoder().decode(child.stdout).trim()}-`;
        // Its idle init ends on its go socket's EOF; until it has, its cgroup is busy (EBUSY).
        let kept: string[] = [];
        await until(() => {
          kept = sweepDeadSandboxCgroups().kept.filter((dir) => dir.includes(dead));
          return kept.length === 0;
        }, 5_000);
        assertEquals(kept, []);
      });
    } finally {
      await upperSyncsSettled();
      await env.dispose();
    }
  },
);

poolTest("an image's tree, staged over the work directory, is not mounted inside", async () => {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const bob = env.rootfs("bob");
      const r = await exec({ workspace, rootfs: bob }, [
        "sh",
        "-c",
        "ls -a /; cat /proc/self/mountinfo",
      ]);
      assertEquals(r.exitCode, 0, r.stderr);
      const [listing, mounts] = [r.stdout.split("\n"), r.stdout.split("\n").slice(1)];
      for (const name of [".coop-root", "oldroot"]) assert(!listing.includes(name), name);
      // Mount points (the fifth field): the image's top-level directories, never its stage.
      const points = mounts.filter((line) => line.includes(" - ")).map((l) => l.split(" ")[4]);
      assert(points.includes("/usr"), r.stdout);
      assert(!points.some((point) => /^\/(oldroot|\.coop-root)|\/w-\d+-/.test(point)), r.stdout);
    });
  } finally {
    await workdirRemovalsSettled();
    await upperSyncsSettled();
    await env.dispose();
  }
});
