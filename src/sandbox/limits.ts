/**
 * Resource limits: which enforcement path applies to a policy on this host, and exactly what
 * it enforces. Paths, best first: cgroup v2 in a delegated subtree, cgroup v1 when the gateway
 * runs as root on a hybrid host, rlimits otherwise. A limit no available path can enforce is an error, never silently dropped.
 * docs/limits.md describes each path's guarantees and gaps.
 * @module
 */
import type { CgroupHost, V1Controller } from "./cgroup_host.ts";
import { SandboxLimitError } from "./errors.ts";
import type { SandboxPolicy } from "./policy.ts";

/** The enforcement path that applied a sandbox's limits. */
export type LimitPath = "cgroup-v2" | "cgroup-v1" | "rlimit";

/** What was applied to one sandbox, as `ExecResult.limits` and `--json` report it. */
export interface AppliedLimits {
  /** The path that enforced the memory/pids/cpu limits. */
  path: LimitPath;
  /** Memory: the whole sandbox's (cgroup, tmpfs included) or each process's address space. */
  memory?: { bytes: number; enforcedBy: "memory.max" | "memory.limit_in_bytes" | "RLIMIT_AS" };
  /** Processes and threads alive at once, the init included. */
  pids?: { max: number; enforcedBy: "pids.max" | "RLIMIT_NPROC" };
  /** CPU bandwidth in cores. */
  cpus?: { cores: number; enforcedBy: "cpu.max" | "cpu.cfs_quota_us" };
  /** RLIMIT_CPU per process, when the policy sets one. */
  cpuTimeSeconds?: number;
  /** RLIMIT_FSIZE. */
  fileSizeBytes: number;
  /** RLIMIT_NOFILE (soft = hard). */
  openFiles: number;
  /** RLIMIT_CORE is always 0. */
  coreDumps: false;
  /** Why the better paths were not used. */
  reason: string;
}

/** Linux resource numbers (`RLIMIT_*`, the same on x86_64 and aarch64). */
export const RLIMIT = { CPU: 0, FSIZE: 1, CORE: 4, NPROC: 6, NOFILE: 7, AS: 9 } as const;

/** Files to write in one new cgroup v1 directory, under the gateway's own cgroup. */
export interface CgroupV1Dir {
  controller: V1Controller;
  /** The gateway's cgroup in that hierarchy; the sandbox's goes below it. */
  parent: string;
  /** cgroup file → value, written in order. */
  files: [string, string][];
}

/** The one cgroup v2 directory of a sandbox, below the delegated subtree. */
export interface CgroupV2Dir {
  /** The delegated cgroup; the sandbox's goes directly below it. */
  parent: string;
  /** Controllers to enable in the parent's `cgroup.subtree_control` (those limited). */
  controllers: string[];
  /** cgroup file → value, written in order. */
  files: [string, string][];
}

/** How to enforce a policy's limits. */
export interface LimitPlan {
  applied: AppliedLimits;
  /** [resource, value] pairs for the init (soft = hard), applied last before the fork. */
  rlimits: [number, number][];
  /** Set on the cgroup v1 path. */
  cgroupV1?: CgroupV1Dir[];
  /** Set on the cgroup v2 path. */
  cgroupV2?: CgroupV2Dir;
}

/** CFS period for `cpus`: 100 ms, the kernel default. */
const CFS_PERIOD_US = 100_000;

function cgroupLimitsWanted(policy: SandboxPolicy): V1Controller[] {
  const wanted: V1Controller[] = [];
  if (policy.memoryBytes !== undefined) wanted.push("memory");
  if (policy.pidsLimit !== undefined) wanted.push("pids");
  if (policy.cpus !== undefined) wanted.push("cpu");
  return wanted;
}

/**
 * Chooses the path for `policy` on `host` and lists what to apply.
 * Throws SandboxLimitError when a requested limit has no path here.
 *
 * @example
 * ```ts
 * const plan = planLimits(resolvePolicy({ workspace: "/w", pidsLimit: 64 }), cgroupHost());
 * plan.applied.path; // "cgroup-v1" as root on a hybrid host, else "rlimit"
 * ```
 */
export function planLimits(policy: SandboxPolicy, host: CgroupHost): LimitPlan {
  const rlimits: [number, number][] = [
    [RLIMIT.CORE, 0],
    [RLIMIT.FSIZE, policy.fileSizeBytes],
    [RLIMIT.NOFILE, policy.openFiles],
  ];
  if (policy.cpuTimeSeconds !== undefined) rlimits.push([RLIMIT.CPU, policy.cpuTimeSeconds]);
  const base = {
    fileSizeBytes: policy.fileSizeBytes,
    openFiles: policy.openFiles,
    coreDumps: false as const,
    ...(policy.cpuTimeSeconds !== undefined ? { cpuTimeSeconds: policy.cpuTimeSeconds } : {}),
  };
  const wanted = cgroupLimitsWanted(policy);
  // With a delegated subtree every sandbox gets a cgroup, limited or not: its teardown is then
  // one cgroup.kill, and status and results report one path on such a host.
  const v2 = host.v2;
  const v2Missing = v2 ? wanted.filter((c) => !v2.controllers.includes(c)) : [];
  if (v2 && v2Missing.length === 0) return planV2(policy, v2.dir, wanted, rlimits, base);
  const v2Reason = v2
    ? `cgroup v2 at ${v2.dir} has no ${v2Missing.join("/")} controller`
    : host.v2Reason;
  if (wanted.length === 0) {
    return {
      applied: { path: "rlimit", ...base, reason: "no memory, pids or cpu limit requested" },
      rlimits,
    };
  }
  const v1Missing = wanted.filter((c) => !host.v1.dirs[c]);
  if (v1Missing.length === 0) {
    return planV1(policy, host, wanted, rlimits, base, v2Reason);
  }
  const v1Reason = v1Missing.map((c) => host.v1.unusable[c]).join("; ");
  const reason = `${v2Reason}; ${v1Reason}`;
  if (policy.cpus !== undefined) {
    throw new SandboxLimitError(
      `cpus = ${policy.cpus} cannot be enforced here: rlimits have no CPU bandwidth limit ` +
        `and no cgroup path is available (${reason}). Run the gateway as root on a host with ` +
        "cgroup v1 cpu, or with a delegated cgroup v2 subtree that has the cpu controller, or " +
        "drop the cpu limit (the wall-clock timeout still applies)",
    );
  }
  const applied: AppliedLimits = { path: "rlimit", ...base, reason };
  if (policy.memoryBytes !== undefined) {
    // RLIMIT_AS in the spec is also what tells the init that the limit counts only address
    // spaces: it then bounds the IPC namespace's memory to it and seccomp refuses memfds
    // (ffi/init/ipc_limits.c, ATTACKS R13). The cgroup paths must therefore not set it.
    rlimits.push([RLIMIT.AS, policy.memoryBytes]);
    applied.memory = { bytes: policy.memoryBytes, enforcedBy: "RLIMIT_AS" };
  }
  if (policy.pidsLimit !== undefined) {
    // Since Linux 5.14 RLIMIT_NPROC is counted per user namespace and uid (ucounts), so inside
    // the sandbox's own user namespace it counts only the sandbox's processes; the outer levels
    // keep the invoker's own limit. docs/limits.md has the measurement.
    rlimits.push([RLIMIT.NPROC, policy.pidsLimit]);
    applied.pids = { max: policy.pidsLimit, enforcedBy: "RLIMIT_NPROC" };
  }
  return { applied, rlimits };
}

function planV1(
  policy: SandboxPolicy,
  host: CgroupHost,
  wanted: V1Controller[],
  rlimits: [number, number][],
  base: Omit<AppliedLimits, "path" | "reason">,
  reason: string,
): LimitPlan {
  const applied: AppliedLimits = { path: "cgroup-v1", ...base, reason };
  const dirs: CgroupV1Dir[] = [];
  for (const controller of wanted) {
    const parent = host.v1.dirs[controller]!;
    const files: [string, string][] = [];
    if (controller === "memory") {
      const bytes = String(policy.memoryBytes);
      files.push(["memory.limit_in_bytes", bytes]);
      // memsw (memory + swap) equal to the memory limit: no swapping past it. Absent when the
      // kernel has no swap accounting; then memory.limit_in_bytes alone bounds RAM.
      files.push(["memory.memsw.limit_in_bytes", bytes]);
      applied.memory = { bytes: policy.memoryBytes!, enforcedBy: "memory.limit_in_bytes" };
    } else if (controller === "pids") {
      files.push(["pids.max", String(policy.pidsLimit)]);
      applied.pids = { max: policy.pidsLimit!, enforcedBy: "pids.max" };
    } else {
      const quota = Math.max(1000, Math.round(policy.cpus! * CFS_PERIOD_US));
      files.push(["cpu.cfs_period_us", String(CFS_PERIOD_US)]);
      files.push(["cpu.cfs_quota_us", String(quota)]);
      applied.cpus = { cores: policy.cpus!, enforcedBy: "cpu.cfs_quota_us" };
    }
    dirs.push({ controller, parent, files });
  }
  return { applied, rlimits, cgroupV1: dirs };
}

function planV2(
  policy: SandboxPolicy,
  parent: string,
  wanted: V1Controller[],
  rlimits: [number, number][],
  base: Omit<AppliedLimits, "path" | "reason">,
): LimitPlan {
  const applied: AppliedLimits = {
    path: "cgroup-v2",
    ...base,
    reason: "the best path: a delegated cgroup v2 subtree",
  };
  const files: [string, string][] = [];
  if (policy.memoryBytes !== undefined) {
    files.push(["memory.max", String(policy.memoryBytes)]);
    // v2 counts swap separately (memory.swap.max is swap only): none, so the sandbox cannot
    // swap past its limit. Absent without swap accounting; memory.max alone bounds RAM then.
    files.push(["memory.swap.max", "0"]);
    applied.memory = { bytes: policy.memoryBytes, enforcedBy: "memory.max" };
  }
  if (policy.pidsLimit !== undefined) {
    files.push(["pids.max", String(policy.pidsLimit)]);
    applied.pids = { max: policy.pidsLimit, enforcedBy: "pids.max" };
  }
  if (policy.cpus !== undefined) {
    const quota = Math.max(1000, Math.round(policy.cpus * CFS_PERIOD_US));
    files.push(["cpu.max", `${quota} ${CFS_PERIOD_US}`]);
    applied.cpus = { cores: policy.cpus, enforcedBy: "cpu.max" };
  }
  return { applied, rlimits, cgroupV2: { parent, controllers: wanted, files } };
}
