import { assertEquals, assertMatch, assertThrows } from "../assert.ts";
import {
  type CgroupHost,
  planLimits,
  resolvePolicy,
  SandboxLimitError,
  SandboxPolicyError,
} from "../../src/sandbox/mod.ts";
import { describeCgroupHost } from "../../src/sandbox/cgroup_host.ts";
import { RLIMIT } from "../../src/sandbox/limits.ts";
import { parseLimitFlags } from "../../src/cli/sandbox_exec_command.ts";
import { UsageError } from "../../src/cli/usage_error.ts";

const MiB = 2 ** 20;

Deno.test("--memory takes binary sizes in either case; --pids a whole number", () => {
  assertEquals(parseLimitFlags("256m", undefined), { memoryBytes: 256 * MiB });
  assertEquals(parseLimitFlags("1g", "64"), { memoryBytes: 2 ** 30, pidsLimit: 64 });
  assertEquals(parseLimitFlags("512MiB", undefined), { memoryBytes: 512 * MiB });
  assertEquals(parseLimitFlags("1048576", undefined), { memoryBytes: MiB });
  for (const [memory, pids] of [["lots", undefined], ["0", undefined], [undefined, "-1"]]) {
    assertThrows(() => parseLimitFlags(memory, pids), UsageError);
  }
  assertMatch(assertThrows(() => parseLimitFlags(undefined, "6.5"), UsageError).message, /--pids/);
});

Deno.test("limit fields are validated with messages that name the field", () => {
  const cases: [Record<string, unknown>, RegExp][] = [
    [{ memoryBytes: 1024 }, /memoryBytes: must be at least 16 MiB/],
    [{ memoryBytes: 1.5 * MiB * 100 + 0.5 }, /memoryBytes: must be a whole number/],
    [{ pidsLimit: 1 }, /pidsLimit: must be at least 2/],
    [{ pidsLimit: 5_000_000 }, /pidsLimit: must be at most 4194304/],
    [{ cpus: 0 }, /cpus: must be at least 0.01/],
    [{ openFiles: 3 }, /openFiles: must be at least 64/],
    [{ fileSizeBytes: 10 }, /fileSizeBytes: must be at least 1 MiB/],
  ];
  for (const [fields, message] of cases) {
    const error = assertThrows(
      () => resolvePolicy({ workspace: "/w", ...fields }),
      SandboxPolicyError,
    );
    assertMatch(error.message, message);
  }
  const p = resolvePolicy({ workspace: "/w" });
  assertEquals([p.memoryBytes, p.pidsLimit, p.cpus], [undefined, undefined, undefined]);
  assertEquals([p.openFiles, p.fileSizeBytes], [1024, 4 * 2 ** 30]);
});

// This host, as root: a v1/v2 hybrid whose v2 has no memory/pids controller.
const MOUNTINFO = [
  "30 25 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
  "31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
  "34 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
  "38 25 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
].join("\n");
const PROC_CGROUP = "8:pids:/\n4:memory:/agents/a1\n1:cpu:/\n0::/\n";
const read = (path: string) => path.endsWith("cgroup.controllers") ? "hugetlb\n" : null;

Deno.test("the host description finds v1 hierarchies and says why v2 is unusable", () => {
  const root = describeCgroupHost(MOUNTINFO, PROC_CGROUP, 0, read);
  assertEquals(root.v1.dirs, {
    memory: "/sys/fs/cgroup/memory/agents/a1",
    pids: "/sys/fs/cgroup/pids",
    cpu: "/sys/fs/cgroup/cpu",
  });
  assertMatch(root.v2Reason, /offers \[hugetlb\].*no memory\/pids controller/);
  const user = describeCgroupHost(MOUNTINFO, PROC_CGROUP, 1001, read);
  assertEquals(user.v1.dirs, {});
  assertMatch(user.v1.unusable.pids!, /needs root \(invoked as uid 1001/);
});

const hostAs = (uid: number): CgroupHost => describeCgroupHost(MOUNTINFO, PROC_CGROUP, uid, read);

Deno.test("as root the cgroup v1 path gets memory (+memsw), pids and cpu quota", () => {
  const plan = planLimits(
    resolvePolicy({ workspace: "/w", memoryBytes: 256 * MiB, pidsLimit: 64, cpus: 0.5 }),
    hostAs(0),
  );
  assertEquals(plan.applied.path, "cgroup-v1");
  assertEquals(plan.cgroupV1, [
    {
      controller: "memory",
      parent: "/sys/fs/cgroup/memory/agents/a1",
      files: [
        ["memory.limit_in_bytes", String(256 * MiB)],
        ["memory.memsw.limit_in_bytes", String(256 * MiB)],
      ],
    },
    { controller: "pids", parent: "/sys/fs/cgroup/pids", files: [["pids.max", "64"]] },
    {
      controller: "cpu",
      parent: "/sys/fs/cgroup/cpu",
      files: [["cpu.cfs_period_us", "100000"], ["cpu.cfs_quota_us", "50000"]],
    },
  ]);
  // Hygiene rlimits apply on every path; no RLIMIT_AS/NPROC when cgroups do the job.
  assertEquals(plan.rlimits, [[RLIMIT.CORE, 0], [RLIMIT.FSIZE, 4 * 2 ** 30], [
    RLIMIT.NOFILE,
    1024,
  ]]);
});

Deno.test("unprivileged, memory and pids fall back to RLIMIT_AS and RLIMIT_NPROC", () => {
  const plan = planLimits(
    resolvePolicy({ workspace: "/w", memoryBytes: 256 * MiB, pidsLimit: 64 }),
    hostAs(1001),
  );
  assertEquals(plan.applied.path, "rlimit");
  assertEquals(plan.cgroupV1, undefined);
  assertEquals(plan.rlimits.slice(3), [[RLIMIT.AS, 256 * MiB], [RLIMIT.NPROC, 64]]);
  assertEquals(plan.applied.memory, { bytes: 256 * MiB, enforcedBy: "RLIMIT_AS" });
  assertMatch(plan.applied.reason, /hugetlb.*needs root/);
});

Deno.test("a cpu limit with no cgroup path fails closed instead of running unlimited", () => {
  const error = assertThrows(
    () => planLimits(resolvePolicy({ workspace: "/w", cpus: 1 }), hostAs(1001)),
    SandboxLimitError,
  );
  assertMatch(error.message, /cpus = 1 cannot be enforced here: .*needs root/);
});

Deno.test("no limits requested: only the hygiene rlimits, and no cgroup", () => {
  const plan = planLimits(resolvePolicy({ workspace: "/w", cpuTimeSeconds: 30 }), hostAs(0));
  assertEquals(plan.applied.path, "rlimit");
  assertEquals(plan.cgroupV1, undefined);
  assertEquals(plan.rlimits.at(-1), [RLIMIT.CPU, 30]);
});
