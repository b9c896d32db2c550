// An environment root's overlay is mounted volatile over a fresh work directory
// (src/sandbox/overlay_workdir.ts, upper_sync.ts), and held for the next sandboxes of its upper
// (held_overlay.ts): the mount before never blocks the next one, nothing of a work directory is
// left once its overlay is dropped, what a crashed gateway left is swept, and the upper's file
// system is synced after the command instead of at its unmount.
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { mkdirSync } from "node:fs";
import { exec, startSession } from "../../src/sandbox/mod.ts";
import { workdirRemovalsSettled } from "../../src/sandbox/overlay_workdir.ts";
import { dropHeldOverlays, heldOverlayCount } from "../../src/sandbox/held_overlay.ts";
import { syncUpper, upperSyncsSettled } from "../../src/sandbox/upper_sync.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";
import { ROOT_UID, testEnvironment } from "./environment_fixture.ts";

async function entries(dir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const entry of Deno.readDir(dir)) names.push(entry.name);
  return names.sort();
}

sandboxTest(
  "one upper mounted volatile many times: each command sees the last one's files",
  async () => {
    const env = await testEnvironment();
    dropHeldOverlays(); // what an earlier test of this process held
    try {
      await withWorkspace(async (workspace) => {
        const bob = env.rootfs("bob");
        for (let i = 1; i <= 4; i++) {
          const r = await exec({ workspace, rootfs: bob }, [
            "sh",
            "-c",
            `echo ${i} >> /usr/counter && cat /usr/counter`,
          ]);
          assertEquals(r.stderr, "");
          assertEquals(r.stdout, Array.from({ length: i }, (_, k) => `${k + 1}\n`).join(""));
        }
        await workdirRemovalsSettled();
        await upperSyncsSettled();
        // One overlay was mounted, and is held: its work directory is the only one left …
        assertEquals(heldOverlayCount(), 1);
        assertEquals((await entries(bob.work)).length, 1);
        // … until it is dropped.
        dropHeldOverlays();
        await workdirRemovalsSettled();
        assertEquals(await entries(bob.work), []);
        assertEquals(await Deno.readTextFile(`${bob.upper}/usr/counter`), "1\n2\n3\n4\n");
      });
    } finally {
      await env.dispose();
    }
  },
);

sandboxTest("a live session's work directory is removed when the session ends", async () => {
  const env = await testEnvironment();
  dropHeldOverlays(); // what an earlier test of this process held
  try {
    await withWorkspace(async (workspace) => {
      const bob = env.rootfs("bob");
      const session = await startSession({ workspace, rootfs: bob });
      try {
        const r = await session.exec(["sh", "-c", "echo kept > /usr/kept && ls -d /usr"]);
        assertEquals(r.exitCode, 0);
        assertEquals((await entries(bob.work)).length, 1, "the session's own work directory");
      } finally {
        await session.stop();
      }
      // Its overlay is held for the next sandbox of bob's upper, then dropped.
      assertEquals(heldOverlayCount(), 1);
      dropHeldOverlays();
      await workdirRemovalsSettled();
      await upperSyncsSettled();
      assertEquals(await entries(bob.work), []);
      assertEquals(await Deno.readTextFile(`${bob.upper}/usr/kept`), "kept\n");
    });
  } finally {
    await env.dispose();
  }
});

sandboxTest("work directories a dead gateway left, and the old layout's, are swept", async () => {
  const env = await testEnvironment();
  try {
    await withWorkspace(async (workspace) => {
      const bob = env.rootfs("bob");
      // A pid that cannot be alive (above pid_max), the single `work` of the layout before, and
      // one a live process (this one's parent) holds: only the first two go.
      mkdirSync(`${bob.work}/w-4194305-x-1/work/incompat/volatile`, { recursive: true });
      await Deno.chown(bob.work, ROOT_UID, ROOT_UID);
      await Deno.chmod(`${bob.work}/w-4194305-x-1/work`, 0);
      mkdirSync(`${bob.work}/work/work`, { recursive: true });
      const live = `w-${Deno.ppid}-y-1`;
      mkdirSync(`${bob.work}/${live}`);
      const r = await exec({ workspace, rootfs: bob }, ["sh", "-c", ":"]);
      assertEquals(r.exitCode, 0);
      dropHeldOverlays(); // this process's own overlay, held after the command
      await workdirRemovalsSettled();
      assertEquals(await entries(bob.work), [live]);
    });
  } finally {
    await env.dispose();
  }
});

sandboxTest("syncs of one file system are shared, and a missing upper is an error", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const a = `${dir}/a`, b = `${dir}/b`;
    await Deno.mkdir(a);
    await Deno.mkdir(b);
    const all = [syncUpper(a), syncUpper(b), syncUpper(a), syncUpper(b)];
    // The second and later calls wait for one more sync after the running one: the same promise.
    assert(all[1] === all[2] && all[2] === all[3]);
    await Promise.all(all);
    await upperSyncsSettled();
    const error = await assertRejects(() => syncUpper(`${dir}/missing`), Error);
    assertEquals((error as { code?: string }).code, "ENOENT");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
