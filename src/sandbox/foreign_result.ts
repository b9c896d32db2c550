/**
 * The shape every backend answers in: a tool run (`cli_process.ts`) as an ExecResult, so the
 * gateway and the CLI see the same fields whichever backend ran the command.
 * @module
 */
import type { CliResult } from "./cli_process.ts";
import { SandboxLimitError, SandboxUnavailableError } from "./errors.ts";
import type { ExecResult } from "./exec.ts";
import type { AppliedLimits } from "./limits.ts";
import type { SandboxPolicy } from "./policy.ts";

/**
 * Refuses a policy with a disk or inode quota on a macOS backend (fail closed, like a memory
 * limit sandbox-exec cannot enforce): the quotas are Linux's, a loop-mounted image or the
 * accounting watchdog, and a command must never run believing its workspace is bounded.
 */
export function refuseWorkspaceQuotas(policy: SandboxPolicy, backend: string): void {
  const set = [
    policy.diskQuotaBytes !== undefined && "diskQuotaBytes",
    policy.inodeQuota !== undefined && "inodeQuota",
  ].filter(Boolean);
  if (set.length === 0) return;
  throw new SandboxLimitError(
    `${set.join(", ")}: the ${backend} backend cannot enforce workspace quotas (they need ` +
      "Linux: a loop-mounted image or the accounting watchdog, docs/limits.md); remove them " +
      "from the policy (disk_quota / inode_quota), or run the command on Linux",
  );
}

/**
 * Refuses a policy with an environment — `rootfs` (its own root) or `persist` binds — on a macOS
 * backend (fail closed): both are Linux mounts, and a command run on the plain VM or host root
 * instead would silently lack what its environment installed, or write where it must not persist.
 */
export function refuseEnvironment(policy: SandboxPolicy, backend: string): void {
  const set = [
    policy.rootfs !== undefined && "rootfs",
    policy.persist.length > 0 && "persist",
  ].filter(Boolean);
  if (set.length === 0) return;
  throw new SandboxUnavailableError(
    `${set.join(", ")}: the ${backend} backend cannot give a command an environment ` +
      "(environments need Linux: an overlay root and bind mounts, docs/environments.md); " +
      "the command was not run — remove environment from this user's sandbox settings, or " +
      "run Coop on Linux",
  );
}

/** `run` as an ExecResult; kernel layers a macOS backend does not have are reported absent. */
export function execResultOf(run: CliResult, limits: AppliedLimits): ExecResult {
  return {
    exitCode: run.timedOut ? 137 : run.exitCode,
    signal: run.timedOut ? "SIGKILL" : run.signal,
    timedOut: run.timedOut,
    stdout: run.stdout,
    stderr: run.stderr,
    truncated: run.truncated,
    durationMs: run.durationMs,
    hardening: { landlockAbi: 0, seccomp: false },
    oomKilled: false,
    pidsLimitHit: null,
    limits,
    proxyDenials: [],
    proxyRefusedConnections: 0,
    // No per-command rusage through a CLI: the elapsed time, an upper bound, for budgets.
    cpu: { userMs: run.durationMs, systemMs: 0, measuredBy: "wall-clock" },
    // Workspace quotas are a Linux feature (docs/limits.md); a macOS backend has none.
    disk: null,
  };
}

/** `NAME=value` entries as an environment object. */
export function envObject(entries: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const entry of entries) {
    const at = entry.indexOf("=");
    env[entry.slice(0, at)] = entry.slice(at + 1);
  }
  return env;
}
