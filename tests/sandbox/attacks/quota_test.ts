// ATTACKS F21 and R10 under the workspace quotas (issue 15, item 3), as root and unprivileged
// (docs/limits.md "Disk and inode quotas"). Two paths:
// - hard (root, an empty workspace): the workspace is its own loop-mounted ext4 file system of
//   the quota's size and inode count; the kernel answers ENOSPC. Unprivileged runs skip it.
// - enforced accounting (everyone; as root too when the workspace already holds files): measured
//   before each command and refused over quota, each file bounded by the quota left
//   (RLIMIT_FSIZE), a watchdog re-measuring while the command runs. These rows attack the
//   accounting from inside: a write burst within one command, then the next command, refused.
import { assert, assertEquals, assertMatch, assertRejects } from "../../assert.ts";
import { exec, SandboxQuotaError } from "../../../src/sandbox/mod.ts";
import { quotaImagePath, releaseLoopQuota } from "../../../src/sandbox/loop_quota.ts";
import { measureWorkspace } from "../../../src/sandbox/workspace_usage.ts";
import { attackSuite } from "./attack_table.ts";

const MiB = 2 ** 20;
const DISK = { diskQuotaBytes: 100 * MiB };
const INODES = { inodeQuota: 1000 };
const HARD_SKIP = Deno.uid() === 0
  ? undefined
  : "hard quotas need root (a loop-mounted image); the accounting rows cover this invoker";

/** A workspace that already holds a file: it keeps the accounting path, even as root. */
const nonEmpty = (ws: string) => {
  Deno.writeTextFileSync(`${ws}/.keep`, "x");
  return ws;
};
/** Unmounts and deletes a quota image the row made (root), even when it failed. */
const release = (ws: string) => releaseLoopQuota(ws);

/** The next command in the same workspace is refused before it starts, naming the quota. */
async function nextRefused(workspace: string, policy: object, quota: RegExp): Promise<void> {
  const error = await assertRejects(
    () => exec({ workspace, ...policy }, ["sh", "-c", "echo RAN > /work/ran"]),
    SandboxQuotaError,
  );
  assertMatch(error.message, quota);
  assertMatch(error.message, /the command did not run/);
  assertEquals(await Deno.stat(`${workspace}/ran`).catch(() => null), null);
}

/** Bytes the quota image takes on the host's disk (sparse: what the workspace holds). */
function imageBytes(ws: string): number {
  return (Deno.statSync(quotaImagePath(ws)).blocks ?? 0) * 512;
}

attackSuite("§4.1/§4.5 quotas", [
  {
    id: "F21",
    name: "hard quota: writing past a 100 MiB workspace gets ENOSPC, the host holds ≤ 100 MiB",
    waitsFor: HARD_SKIP,
    prepare: (ws) => ws,
    teardown: release,
    policy: DISK,
    script: "dd if=/dev/zero of=/work/big bs=1M count=200 2>&1; echo rc=$?; " +
      "fallocate -l 500G /work/huge 2>&1; echo rc=$?",
    expect: (r, ws) => {
      assertEquals(r.disk?.enforcement, "loop-image");
      assertMatch(r.stdout, /No space left on device/);
      assertMatch(r.stdout, /rc=1\b[\s\S]*rc=(1|153)\b/);
      const held = imageBytes(ws);
      assert(held <= 100 * MiB, `the image holds ${held} bytes of the host's disk`);
    },
  },
  {
    id: "F21",
    name: "accounting: one file written past a 100 MiB quota stops at the quota (RLIMIT_FSIZE)",
    prepare: nonEmpty,
    policy: DISK,
    script: "dd if=/dev/zero of=/work/big bs=1M count=200 2>&1; echo rc=$?",
    expect: (r, ws) => {
      assertMatch(r.stdout, /rc=(153|1)\b/); // SIGXFSZ (128+25), or EFBIG when it is ignored
      assertEquals(r.disk?.enforcement, "accounting");
      assert(r.disk!.fileSizeBytes <= 100 * MiB, `RLIMIT_FSIZE ${r.disk!.fileSizeBytes}`);
      // What reached the host's disk: the workspace, measured as the quota measures it.
      const used = measureWorkspace(ws, 10_000).bytes;
      assert(used <= 100 * MiB + 64 * 1024, `${used} bytes on the host's disk`);
      assertEquals(r.disk!.exceeded, false);
    },
  },
  {
    id: "F21",
    name: "accounting: a write burst over several files in one command: each bounded, the next " +
      "refused",
    prepare: nonEmpty,
    policy: DISK,
    // Three files of 60 MiB: each is under the per-file bound, together past the quota.
    script: "for i in 1 2 3; do dd if=/dev/zero of=/work/f$i bs=1M count=60 2>/dev/null; done; " +
      "echo done",
    expect: async (r, ws) => {
      assert(r.disk!.exceeded, "the workspace is over quota after the burst");
      const used = measureWorkspace(ws, 10_000).bytes;
      // Bounded: never more than the three files (each ≤ RLIMIT_FSIZE = the quota left).
      assert(used <= 180 * MiB + 64 * 1024, `${used} bytes`);
      await nextRefused(ws, DISK, /over its disk quota of 100M/);
    },
  },
  {
    id: "R10",
    name: "hard quota: 100,000 empty files stop at ENOSPC near an inode quota of 1000",
    waitsFor: HARD_SKIP,
    prepare: (ws) => ws,
    teardown: release,
    policy: { ...DISK, ...INODES },
    script: 'i=0; while [ $i -lt 100000 ]; do true > "/work/f$i" || break; i=$((i + 1)); done; ' +
      "echo made=$i",
    timeoutMs: 60_000,
    expect: (r, ws) => {
      assertEquals(r.disk?.enforcement, "loop-image");
      assertMatch(r.stderr, /No space left on device/);
      const made = Number(/made=(\d+)/.exec(r.stdout)?.[1]);
      // ext4 rounds the inode count to whole inode tables per block group.
      assert(made >= 900 && made <= 1100, `${made} files created`);
      assert([...Deno.readDirSync(ws)].length <= 1100);
      console.log(`  R10 (hard): ENOSPC after ${made} files`);
    },
  },
  {
    id: "R10",
    name: "accounting: 100,000 empty files past an inode quota of 1000: killed by the " +
      "watchdog, next refused",
    prepare: nonEmpty,
    policy: INODES,
    script: 'i=0; while [ $i -lt 100000 ]; do true > "/work/f$i" || break; i=$((i + 1)); done; ' +
      "echo made=$i",
    timeoutMs: 60_000,
    expect: async (r, ws) => {
      assert(!/made=100000/.test(r.stdout), "all 100,000 files were created");
      assertEquals([r.disk?.killed, r.signal], [true, "SIGKILL"]);
      const files = [...Deno.readDirSync(ws)].length;
      assert(files > 1000 && files < 100_000, `${files} files`);
      console.log(`  R10 (accounting): the watchdog stopped the burst at ${files} files`);
      await nextRefused(ws, INODES, /over its inode quota of 1000/);
    },
  },
]);
