/**
 * The `sandbox-exec` backend (macOS): each command under a generated deny-by-default SBPL
 * profile (`macos_profile.ts`), in its own process group so a timeout kills all of it, with
 * the allowlisted environment, `$HOME` the workspace and a private temporary directory.
 * @module
 */
import { mkdtempSync, realpathSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { runCli } from "./cli_process.ts";
import { buildEnvironment } from "./environment.ts";
import { SandboxLimitError, SandboxPolicyError, SandboxUnavailableError } from "./errors.ts";
import type { ExecOptions, ExecResult } from "./exec.ts";
import {
  envObject,
  execResultOf,
  refuseEnvironment,
  refuseWorkspaceQuotas,
} from "./foreign_result.ts";
import type { AppliedLimits } from "./limits.ts";
import { sandboxExecProfile } from "./macos_profile.ts";
import type { SandboxPolicy } from "./policy.ts";
import { protectedPathsIn } from "./protected_paths.ts";

/** The shell prelude that applies the rlimits macOS honours, then runs the command. */
const PRELUDE = 'ulimit -c 0; ulimit -f "$1"; ulimit -n "$2"; shift 2; exec "$@"';

/** The arguments of `sandbox-exec` for `profile` and `argv` under `policy`'s rlimits. */
export function sandboxExecArgs(
  profile: string,
  policy: SandboxPolicy,
  argv: readonly string[],
): string[] {
  // ulimit -f counts 512-byte blocks (POSIX).
  const blocks = Math.max(1, Math.floor(policy.fileSizeBytes / 512));
  return [
    "-p",
    profile,
    "--",
    "/bin/sh",
    "-c",
    PRELUDE,
    "coop",
    String(blocks),
    String(policy.openFiles),
    ...argv,
  ];
}

/**
 * What sandbox-exec applies of the policy's limits, as ExecResult.limits reports it; a
 * memory, process or CPU limit, or a workspace quota, it cannot enforce is refused (fail
 * closed), as on Linux.
 */
export function sandboxExecLimits(policy: SandboxPolicy): AppliedLimits {
  refuseWorkspaceQuotas(policy, "sandbox-exec");
  const unenforceable = [
    policy.memoryBytes !== undefined && "memoryBytes",
    policy.pidsLimit !== undefined && "pidsLimit",
    policy.cpus !== undefined && "cpus",
    policy.cpuTimeSeconds !== undefined && "cpuTimeSeconds",
  ].filter(Boolean);
  if (unenforceable.length) {
    throw new SandboxLimitError(
      `${unenforceable.join(", ")}: sandbox-exec cannot enforce them (macOS has no ` +
        "per-sandbox memory, process or CPU limit); remove them, or use apple/container, " +
        "whose VM has its own memory and CPUs",
    );
  }
  return {
    path: "rlimit",
    fileSizeBytes: policy.fileSizeBytes,
    openFiles: policy.openFiles,
    coreDumps: false,
    reason: "sandbox-exec on macOS: rlimits only (file size, open files, no core dumps)",
  };
}

function networkOf(policy: SandboxPolicy): "none" | "host" {
  if (policy.network === "none" || policy.network === "host") return policy.network;
  throw new SandboxUnavailableError(
    `network "${policy.network}" is not available with sandbox-exec: the policy proxy needs ` +
      'the Linux relay; use network "none" (or apple/container)',
  );
}

/** Runs `argv` under sandbox-exec at `cli`. */
export async function execWithSandboxExec(
  cli: string,
  policy: SandboxPolicy,
  argv: readonly string[],
  options: ExecOptions & { timeoutMs: number },
): Promise<ExecResult> {
  refuseEnvironment(policy, "sandbox-exec");
  const network = networkOf(policy);
  const limits = sandboxExecLimits(policy);
  let workspace: string;
  try {
    // The kernel checks real paths: /tmp is /private/tmp on macOS.
    workspace = realpathSync(policy.workspace);
  } catch {
    throw new SandboxPolicyError(`workspace: ${policy.workspace} does not exist`);
  }
  const protectedPaths = protectedPathsIn(workspace, policy.protectedNames, policy.scanLimit)
    .map((rel) => `${workspace}/${rel}`);
  const tmp = realpathSync(mkdtempSync(`${tmpdir()}/coop-tmp-`));
  try {
    const profile = sandboxExecProfile({ workspace, tmpDir: tmp, protectedPaths, network });
    const env = envObject(
      buildEnvironment(policy, { ...options.env, HOME: workspace, PWD: workspace, TMPDIR: tmp }),
    );
    const run = await runCli(cli, sandboxExecArgs(profile, policy, argv), {
      env,
      cwd: workspace,
      stdin: options.stdin,
      timeoutMs: options.timeoutMs,
      maxOutputBytes: options.maxOutputBytes,
      signal: options.signal,
    });
    // sandbox-exec's own failures (EX_USAGE … EX_CONFIG with its name first): the profile was
    // not applied, so the command never ran.
    if (run.exitCode >= 64 && run.exitCode <= 78 && run.stderr.startsWith("sandbox-exec:")) {
      throw new SandboxUnavailableError(
        `sandbox-exec could not sandbox the command (exit ${run.exitCode}: ` +
          `${run.stderr.trim().split("\n")[0]}); it was not run`,
      );
    }
    return execResultOf(run, limits);
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
