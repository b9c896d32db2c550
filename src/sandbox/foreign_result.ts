/**
 * The shape every backend answers in: a tool run (`cli_process.ts`) as an ExecResult, so the
 * gateway and the CLI see the same fields whichever backend ran the command.
 * @module
 */
import type { CliResult } from "./cli_process.ts";
import type { ExecResult } from "./exec.ts";
import type { AppliedLimits } from "./limits.ts";

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
