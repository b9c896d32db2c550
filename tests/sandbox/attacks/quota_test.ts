// ATTACKS F21 and R10 under the workspace quotas (issue 15, item 3), as root and unprivileged.
// Both run on the enforced-accounting path (docs/limits.md "Disk and inode quotas"): the
// workspace is measured before each command and refused over quota, each file is bounded by
// the quota left (RLIMIT_FSIZE), and a watchdog re-measures while the command runs. So these
// rows attack the accounting from inside: one write burst within a single command, then the
// next command, which must be refused.
import { assert, assertEquals, assertMatch, assertRejects } from "../../assert.ts";
import { exec, SandboxQuotaError } from "../../../src/sandbox/mod.ts";
import { measureWorkspace } from "../../../src/sandbox/workspace_usage.ts";
import { attackSuite } from "./attack_table.ts";

const MiB = 2 ** 20;
const DISK = { diskQuotaBytes: 100 * MiB };
const INODES = { inodeQuota: 1000 };

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

attackSuite("§4.1/§4.5 quotas", [
  {
    id: "F21",
    name: "one file written past a 100 MiB workspace quota stops at the quota (RLIMIT_FSIZE)",
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
    name: "a write burst over several files in one command: each bounded, the next refused",
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
    name: "100,000 empty files past an inode quota of 1000: killed by the watchdog, next refused",
    policy: INODES,
    script: 'i=0; while [ $i -lt 100000 ]; do : > "/work/f$i" || break; i=$((i + 1)); done; ' +
      "echo made=$i",
    timeoutMs: 60_000,
    expect: async (r, ws) => {
      assert(!/made=100000/.test(r.stdout), "all 100,000 files were created");
      assertEquals([r.disk?.killed, r.signal], [true, "SIGKILL"]);
      const files = [...Deno.readDirSync(ws)].length;
      assert(files > 1000 && files < 100_000, `${files} files`);
      console.log(`  R10: the watchdog stopped the burst at ${files} files`);
      await nextRefused(ws, INODES, /over its inode quota of 1000/);
    },
  },
]);
