/**
 * The resource checks of `probe()`: the pids and memory limits and the workspace's disk quota,
 * each measured in a sandbox of its own that tries to exceed them.
 * @module
 */
import { mkdirSync } from "node:fs";
import { exec } from "./exec.ts";
import { releaseLoopQuota } from "./loop_quota.ts";
import type { ProbeCheck } from "./probe.ts";
import { parseProbeOutput } from "./probe_output.ts";

const PROBE_PIDS = 12;
const PROBE_MEMORY = 64 * 2 ** 20;
// Prints the limits and cgroups the command sees, then tries to start twice the pids limit of
// background sleeps and counts how many started.
const LIMITS_SCRIPT = `
echo "as=$(grep '^Max address space' /proc/self/limits | tr -s ' ' | cut -d' ' -f4)"
echo "nproc=$(grep '^Max processes' /proc/self/limits | tr -s ' ' | cut -d' ' -f3)"
echo "cgroups=$(grep -E ':(memory|pids):' /proc/self/cgroup | cut -d: -f2,3 | paste -sd' ' -)"
echo "cgroup2=$(grep '^0::' /proc/self/cgroup | cut -d: -f3)"
(for i in $(seq ${2 * PROBE_PIDS}); do sleep 5 & echo x; done) 2>/dev/null > /tmp/forks
echo "forks=$(wc -l < /tmp/forks)"
`;

/**
 * Measures the resource-limit path: a sandbox with a small pids and memory limit must fail to
 * start twice that many processes, and shows which mechanism bounds it.
 */
export async function limitsCheck(workspace: string): Promise<ProbeCheck> {
  const label = "resource limits";
  try {
    const r = await exec({ workspace, pidsLimit: PROBE_PIDS, memoryBytes: PROBE_MEMORY }, [
      "sh",
      "-c",
      LIMITS_SCRIPT,
    ], { timeoutMs: 10_000, expectViolations: true });
    const v = parseProbeOutput(r.stdout);
    const forks = Number(v.get("forks") ?? "NaN");
    const capped = forks < 2 * PROBE_PIDS;
    const path = r.limits.path;
    const seen = path === "cgroup-v1"
      ? `cgroups inside: ${v.get("cgroups") || "none"}`
      : path === "cgroup-v2"
      ? `cgroup v2 inside: ${v.get("cgroup2") || "none"}`
      : `RLIMIT_AS ${v.get("as")}, RLIMIT_NPROC ${v.get("nproc")} (counted per user namespace)`;
    const memoryOk = path === "cgroup-v1"
      ? /memory:\/coop-/.test(v.get("cgroups") ?? "")
      : path === "cgroup-v2"
      ? /\/coop-[^/]+$/.test(v.get("cgroup2") ?? "")
      : v.get("as") === String(PROBE_MEMORY);
    return {
      id: "resource-limits",
      label,
      ok: capped && memoryOk,
      evidence: `${path}: ${forks} of ${2 * PROBE_PIDS} processes started under a limit of ` +
        `${PROBE_PIDS}; ${seen}; not better because: ${r.limits.reason}`,
    };
  } catch (error) {
    return { id: "resource-limits", label, ok: false, evidence: String(error) };
  }
}

/**
 * Measures the disk quota's enforcement: under an 8 MiB quota a 16 MiB write must stop, and
 * the evidence names how (a loop-mounted image as root on an empty workspace, else accounting).
 */
export async function quotaCheck(workspace: string): Promise<ProbeCheck> {
  const label = "workspace quotas";
  const dir = `${workspace}/quota`;
  try {
    mkdirSync(dir);
    const r = await exec({ workspace: dir, diskQuotaBytes: 8 * 2 ** 20 }, [
      "sh",
      "-c",
      "dd if=/dev/zero of=/work/f bs=64k count=256 2>/dev/null; wc -c < /work/f",
    ], { timeoutMs: 10_000, expectViolations: true });
    const written = Number(r.stdout.trim());
    const how = r.disk?.enforcement === "loop-image"
      ? "the workspace's own file system of the quota's size (ENOSPC)"
      : `RLIMIT_FSIZE = the quota left; a workspace over quota is refused before each command, ` +
        `and a watchdog kills a command that goes over (no hard quota: ${r.disk?.reason})`;
    return {
      id: "workspace-quotas",
      label,
      ok: r.disk !== null && written <= 8 * 2 ** 20,
      evidence: `${r.disk?.enforcement ?? "none"}: a 16 MiB write stopped at ${written} bytes ` +
        `under an 8 MiB quota: ${how}`,
    };
  } catch (error) {
    return { id: "workspace-quotas", label, ok: false, evidence: String(error) };
  } finally {
    await releaseLoopQuota(dir);
  }
}
