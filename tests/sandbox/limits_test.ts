import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { exec, SandboxLimitError, settleSandboxCgroups } from "../../src/sandbox/mod.ts";
import { DEFAULT_SANDBOX_HOST_ID } from "../../src/sandbox/host_ids.ts";
import { prestartedCount } from "../../src/sandbox/prestart.ts";
import { sandboxCgroupPrefix } from "../../src/sandbox/cgroup_files.ts";
import { sandboxTest, sh, withWorkspace } from "./harness.ts";

const MiB = 2 ** 20;
/** Root on this kind of host gets cgroup v1; an unprivileged user gets rlimits. */
const EXPECTED_PATH = Deno.uid() === 0 ? "cgroup-v1" : "rlimit";

/** The host uid sandbox processes run as: the dedicated one for a root invoker, else the invoker. */
const SANDBOX_HOST_UID = Deno.uid() === 0 ? DEFAULT_SANDBOX_HOST_ID : Deno.uid()!;

/** Host processes running as the sandbox's host uid (other users' activity is not counted). */
function hostProcessCount(): number {
  let n = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      if (Deno.statSync(`/proc/${entry.name}`).uid === SANDBOX_HOST_UID) n++;
    } catch {
      // exited while we looked
    }
  }
  return n;
}

/** Processes below this test process (the sandboxes' inits and everything they started). */
function descendants(): number {
  const parentOf = new Map<number, number>();
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      parentOf.set(Number(entry.name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // exited while we looked
    }
  }
  let n = 0;
  for (let pid of parentOf.keys()) {
    while (pid > 1 && pid !== Deno.pid) pid = parentOf.get(pid) ?? 0;
    if (pid === Deno.pid) n++;
  }
  return n;
}

/**
 * This module's sandbox cgroups left once the background removals have finished: by its realm,
 * not only its pid (CI run 55 failed on a `coop-<pid>-…` directory this module never made: another
 * realm's, or one left by an earlier process of the same pid).
 */
async function leftoverCgroups(): Promise<string[]> {
  await settleSandboxCgroups();
  const found: string[] = [];
  for (const hierarchy of ["memory", "pids", "cpu"]) {
    const walk = (dir: string) => {
      try {
        for (const entry of Deno.readDirSync(dir)) {
          if (!entry.isDirectory) continue;
          if (entry.name.startsWith(sandboxCgroupPrefix())) found.push(`${dir}/${entry.name}`);
          else if (dir.split("/").length < 8) walk(`${dir}/${entry.name}`);
        }
      } catch {
        // not mounted / not readable
      }
    };
    walk(`/sys/fs/cgroup/${hierarchy}`);
  }
  return found;
}

sandboxTest(
  "a 1 GiB allocation under a 256 MiB limit is stopped (OOM kill or MemoryError)",
  async () => {
    const r = await withWorkspace((workspace) =>
      exec({ workspace, memoryBytes: 256 * MiB }, ["python3", "-c", "b = bytearray(1 << 30)"], {
        timeoutMs: 30_000,
      })
    );
    assertEquals(r.limits.path, EXPECTED_PATH);
    assertEquals(r.limits.memory?.bytes, 256 * MiB);
    if (EXPECTED_PATH === "cgroup-v1") {
      assertEquals(r.oomKilled, true);
      assertEquals(r.signal, "SIGKILL");
      assertEquals(r.limits.memory?.enforcedBy, "memory.limit_in_bytes");
      assertEquals(await leftoverCgroups(), []);
    } else {
      assertEquals(r.oomKilled, false);
      assertMatch(r.stderr, /MemoryError/);
      assertEquals(r.limits.memory?.enforcedBy, "RLIMIT_AS");
    }
    assertEquals(r.timedOut, false);
  },
);

sandboxTest(
  "the same allocation without a limit succeeds (the limit is what stopped it)",
  async () => {
    const r = await sh("python3 -c 'b = bytearray(1 << 28); print(len(b))'");
    assertEquals(r.stdout, `${1 << 28}\n`);
    assertEquals(r.oomKilled, false);
  },
);

sandboxTest(
  "a fork bomb under --pids 64 is contained, killed, and leaves nothing behind",
  async () => {
    const hostBefore = hostProcessCount();
    const ownBefore = descendants() - prestartedCount();
    let peak = 0;
    // Idle inits (kept per cgroup plan, one made for the next such command meanwhile) are the
    // gateway's, not the bomb's: not counted.
    const sampler = setInterval(
      () => (peak = Math.max(peak, descendants() - prestartedCount())),
      50,
    );
    const r = await withWorkspace((workspace) =>
      exec({ workspace, pidsLimit: 64 }, [
        "sh",
        "-c",
        // Each process forks two more and becomes a sleep: the population grows until forks
        // fail and then stays there, so the peak measures the limit, not the timing. The
        // command's own shell forks once, before the bomb exists, then becomes a sleep: had it
        // run the bomb itself, its second fork could meet a full pids.max and dash would exit
        // on "Cannot fork", ending the sandbox early (seen in CI under load).
        "bomb() { bomb | bomb & exec sleep 100; }; (bomb) & exec sleep 100",
      ], {
        timeoutMs: 2500,
      })
    );
    clearInterval(sampler);
    assertEquals(r.limits.path, EXPECTED_PATH);
    assertEquals(r.limits.pids?.max, 64);
    // Once seen in CI (not reproduced in 50 runs since): the bomb ended within 40 ms. Say how.
    assertEquals(
      r.timedOut,
      true,
      `ended early: exit ${r.exitCode}, signal ${r.signal}, pidsLimitHit ${r.pidsLimitHit}, ` +
        `stderr ${JSON.stringify(r.stderr.slice(0, 300))}`,
    );
    // The init, the shell and the bomb together never exceed the limit.
    assert(peak <= ownBefore + 64, `peak ${peak} processes below the gateway (limit 64)`);
    assert(peak >= ownBefore + 32, `the bomb never grew (peak ${peak}): the test proves nothing`);
    if (EXPECTED_PATH === "cgroup-v1") {
      assertEquals(r.pidsLimitHit, true);
      assertEquals(await leftoverCgroups(), []);
    } else {
      assertEquals(r.pidsLimitHit, null);
    }
    assertEquals(descendants() - prestartedCount(), ownBefore);
    // Other things run on the host too: wait for the count to come back, don't race it.
    let hostAfter = hostProcessCount();
    for (let i = 0; i < 40 && hostAfter > hostBefore; i++) {
      await new Promise((done) => setTimeout(done, 50));
      hostAfter = hostProcessCount();
    }
    assert(hostAfter <= hostBefore, `host processes ${hostBefore} → ${hostAfter}`);
  },
);

sandboxTest({
  name: "RLIMIT_NPROC counts only the sandbox's processes, not the invoker's others",
  ignore: Deno.uid() === 0,
}, async () => {
  // 70 processes of this uid outside; a limit of 64 inside must still allow 20 forks.
  const outside = Array.from(
    { length: 70 },
    () => new Deno.Command("sleep", { args: ["30"], stdout: "null", stderr: "null" }).spawn(),
  );
  try {
    const r = await withWorkspace((workspace) =>
      exec({ workspace, pidsLimit: 64 }, [
        "sh",
        "-c",
        "n=0; for i in $(seq 20); do sleep 5 & n=$((n+1)); done; echo started=$n",
      ], { timeoutMs: 10_000 })
    );
    assertEquals(r.limits.pids?.enforcedBy, "RLIMIT_NPROC");
    assertEquals(r.stdout, "started=20\n");
  } finally {
    for (const child of outside) child.kill("SIGKILL");
    await Promise.all(outside.map((child) => child.status));
  }
});

sandboxTest("a CPU burn is killed at the timeout, with timedOut reported", async () => {
  const started = performance.now();
  const r = await sh("for i in 1 2 3 4; do (while :; do :; done) & done; wait", {
    timeoutMs: 1000,
  });
  assertEquals(r.timedOut, true);
  assertEquals(r.signal, "SIGKILL");
  assert(performance.now() - started < 1000 + 5000); // killed at the timeout, with slack
});

sandboxTest("hygiene rlimits apply on every path and cannot be raised inside", async () => {
  const r = await sh(
    "grep -E '^Max (core file size|open files|file size) ' /proc/self/limits | tr -s ' '; " +
      "ulimit -n 4096 2>/dev/null && echo raised || echo refused",
  );
  assertEquals(
    r.stdout,
    "Max file size 4294967296 4294967296 bytes \n" +
      "Max core file size 0 0 bytes \n" +
      "Max open files 1024 1024 files \n" +
      "refused\n",
  );
  assertEquals(r.limits.path, "rlimit");
  assertEquals(r.limits.coreDumps, false);
});

sandboxTest("a file larger than fileSizeBytes stops at the limit", async () => {
  const r = await withWorkspace((workspace) =>
    exec({ workspace, fileSizeBytes: 2 * MiB }, [
      "sh",
      "-c",
      "head -c 3M /dev/zero > /work/big; echo status=$?; wc -c < /work/big",
    ])
  );
  assertMatch(r.stdout, /status=1\d\d\n2097152\n/); // killed by SIGXFSZ (128+25)
});

sandboxTest("cpus: cgroup quota as root, refused (fail closed) without cgroups", async () => {
  if (EXPECTED_PATH === "cgroup-v1") {
    const r = await withWorkspace((workspace) => exec({ workspace, cpus: 0.5 }, ["true"]));
    assertEquals(r.limits.cpus, { cores: 0.5, enforcedBy: "cpu.cfs_quota_us" });
    assertEquals(await leftoverCgroups(), []);
  } else {
    const error = await assertRejects(
      () => withWorkspace((workspace) => exec({ workspace, cpus: 0.5 }, ["true"])),
      SandboxLimitError,
    );
    assertMatch(error.message, /cannot be enforced here/);
  }
});
