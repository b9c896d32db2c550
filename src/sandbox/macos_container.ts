/**
 * The apple/container backend (macOS): one long-lived Linux VM per workspace — i.e. per user,
 * who each have their own — started with `container run -d` (memory and CPUs from the policy,
 * the workspace at /work, no DNS), then one `container exec` per command as an unprivileged
 * uid, since a VM per command costs 0.2–0.9 s. With network "none" the VM's default route is
 * removed as root at start; the commands' uid cannot put it back. The protected paths (`.git`,
 * …) that exist in the workspace are mounted read-only over it, and the VM carries labels of
 * which, and of its memory and CPUs: when either changes (a repository cloned by the last
 * command; a reload, or a cron job's own limits), the VM is replaced before the next command
 * runs, so none of them is ever writable from inside and every command gets its policy's limits.
 * A timeout kills the VM (the next command starts a fresh one): nothing the command started
 * survives it.
 * @module
 */
import { createHash } from "node:crypto";
import { realpathSync } from "node:fs";
import { runCli, toolEnv } from "./cli_process.ts";
import { buildEnvironment, WORKSPACE_MOUNT } from "./environment.ts";
import { SandboxLimitError, SandboxPolicyError, SandboxUnavailableError } from "./errors.ts";
import { protectedPathsIn } from "./protected_paths.ts";
import type { ExecOptions, ExecResult } from "./exec.ts";
import { execResultOf, refuseEnvironment, refuseWorkspaceQuotas } from "./foreign_result.ts";
import type { AppliedLimits } from "./limits.ts";
import type { SandboxPolicy } from "./policy.ts";

/** The image the VM boots (a small Linux with a shell); its tools are what commands get. */
export const CONTAINER_IMAGE = "docker.io/library/alpine:3.20";
/** The uid:gid commands run as inside the VM (not root: it cannot restore the route). */
export const CONTAINER_USER = "1000:1000";
/** VM memory when the policy sets none (apple/container's own default is 1 GiB). */
const DEFAULT_MEMORY_MIB = 1024;

/** The VM's name for `workspace`: stable, so every command of one user finds the same VM. */
export function containerName(workspace: string): string {
  return `coop-${createHash("sha256").update(workspace).digest("hex").slice(0, 16)}`;
}

/** The label naming which protected paths a VM mounts read-only (`protectedPathsLabel`). */
export const PROTECTED_LABEL = "coop.protected";
/** The label naming the memory and CPUs a VM was started with (`limitsLabel`). */
export const LIMITS_LABEL = "coop.limits";

/** The label's value for `protectedPaths` (relative to the workspace): a digest of the sorted list. */
export function protectedPathsLabel(protectedPaths: readonly string[]): string {
  const digest = createHash("sha256").update([...protectedPaths].sort().join("\0"));
  return digest.digest("hex").slice(0, 16);
}

/** The memory (MiB) and CPUs the VM gets for `policy`: whole CPUs, at least one. */
function vmLimits(policy: SandboxPolicy): { memoryMib: number; cpus: number } {
  return {
    memoryMib: policy.memoryBytes ? Math.ceil(policy.memoryBytes / (1 << 20)) : DEFAULT_MEMORY_MIB,
    cpus: Math.max(1, Math.ceil(policy.cpus ?? 1)),
  };
}

/** The label's value for `policy`'s VM limits, e.g. `2048M-2cpu`. */
export function limitsLabel(policy: SandboxPolicy): string {
  const { memoryMib, cpus } = vmLimits(policy);
  return `${memoryMib}M-${cpus}cpu`;
}

/**
 * The labels that say which VM `policy` needs: a running VM whose labels differ in any of them
 * (protected paths, memory, CPUs are all fixed when it starts) is replaced.
 */
function vmLabels(
  policy: SandboxPolicy,
  protectedPaths: readonly string[],
): Record<string, string> {
  return {
    [PROTECTED_LABEL]: protectedPathsLabel(protectedPaths),
    [LIMITS_LABEL]: limitsLabel(policy),
  };
}

/**
 * `--mount` arguments that keep each protected path read-only inside the VM. `--mount` splits
 * its value at commas and equals signs, so a path holding either cannot be expressed: refused,
 * and the command with it (fail closed), rather than left writable.
 */
function protectedMounts(workspace: string, protectedPaths: readonly string[]): string[] {
  return protectedPaths.flatMap((relative) => {
    const source = `${workspace}/${relative}`;
    if (/[,=]/.test(source)) {
      throw new SandboxUnavailableError(
        `${source} must stay read-only, and the apple/container backend cannot mount a path ` +
          "holding a comma or an equals sign; rename it — nothing was run",
      );
    }
    return ["--mount", `type=bind,source=${source},target=${WORKSPACE_MOUNT}/${relative},readonly`];
  });
}

/**
 * `container run` arguments that start the long-lived VM for `policy`, with `protectedPaths`
 * (relative to the workspace) read-only.
 */
export function containerRunArgs(
  policy: SandboxPolicy,
  workspace: string,
  name: string,
  protectedPaths: readonly string[] = [],
): string[] {
  const { memoryMib, cpus } = vmLimits(policy);
  const labels = Object.entries(vmLabels(policy, protectedPaths));
  return [
    "run",
    "--detach",
    "--name",
    name,
    "--label",
    "coop.sandbox=1",
    ...labels.flatMap(([key, value]) => ["--label", `${key}=${value}`]),
    "--memory",
    `${memoryMib}M`,
    "--cpus",
    String(cpus),
    "--volume",
    `${workspace}:${WORKSPACE_MOUNT}`,
    ...protectedMounts(workspace, protectedPaths),
    "--workdir",
    WORKSPACE_MOUNT,
    "--no-dns",
    CONTAINER_IMAGE,
    "sleep",
    "infinity",
  ];
}

/** Removes the VM's default route (network "none"), as root, once at start. */
export function containerNoNetworkArgs(name: string): string[] {
  return [
    "exec",
    "--user",
    "0:0",
    name,
    "sh",
    "-c",
    "ip route del default 2>/dev/null; ! ip route show default | grep -q .",
  ];
}

/** `container exec` arguments for one command. */
export function containerExecArgs(
  name: string,
  env: readonly string[],
  argv: readonly string[],
  interactive: boolean,
): string[] {
  return [
    "exec",
    ...(interactive ? ["--interactive"] : []),
    "--user",
    CONTAINER_USER,
    "--workdir",
    WORKSPACE_MOUNT,
    ...env.flatMap((entry) => ["--env", entry]),
    name,
    ...argv,
  ];
}

/**
 * What the VM enforces of the policy's limits; a pids or CPU-time limit, or a workspace quota,
 * it cannot enforce is refused.
 */
export function containerLimits(policy: SandboxPolicy): AppliedLimits {
  refuseWorkspaceQuotas(policy, "apple/container");
  const unenforceable = [
    policy.pidsLimit !== undefined && "pidsLimit",
    policy.cpuTimeSeconds !== undefined && "cpuTimeSeconds",
  ].filter(Boolean);
  if (unenforceable.length) {
    throw new SandboxLimitError(
      `${unenforceable.join(", ")}: the apple/container backend cannot enforce them yet ` +
        "(its VM bounds memory and CPUs only); remove them from the policy",
    );
  }
  const { memoryMib, cpus } = vmLimits(policy);
  return {
    path: "rlimit",
    fileSizeBytes: policy.fileSizeBytes,
    openFiles: policy.openFiles,
    coreDumps: false,
    reason: `apple/container: the VM bounds memory (${memoryMib} MiB${
      policy.memoryBytes ? "" : " default"
    }) and CPUs (${cpus}) for all of the user's commands`,
  };
}

function firstLine(text: string): string {
  return text.trim().split("\n")[0] || "no output";
}

/**
 * Starts the VM unless one runs that mounts exactly `protectedPaths` read-only and has the
 * policy's memory and CPUs (its labels say so; one without them is replaced too); throws
 * SandboxUnavailableError naming why it did not start.
 */
async function ensureVm(
  cli: string,
  policy: SandboxPolicy,
  workspace: string,
  name: string,
  protectedPaths: readonly string[],
) {
  const inspect = await runCli(cli, ["inspect", name], { env: toolEnv(), timeoutMs: 15_000 });
  let state: string | undefined;
  let labels: Record<string, unknown> = {};
  try {
    const snapshot = inspect.exitCode === 0 ? JSON.parse(inspect.stdout)?.[0] : undefined;
    state = snapshot?.status;
    labels = snapshot?.configuration?.labels ?? {};
  } catch {
    state = undefined;
  }
  const wanted = Object.entries(vmLabels(policy, protectedPaths));
  if (state === "running" && wanted.every(([key, value]) => labels[key] === value)) return;
  if (state !== undefined) {
    await runCli(cli, ["delete", "--force", name], { env: toolEnv(), timeoutMs: 30_000 });
  }
  const run = await runCli(cli, containerRunArgs(policy, workspace, name, protectedPaths), {
    env: toolEnv(),
    timeoutMs: 120_000,
  });
  if (run.exitCode !== 0) {
    throw new SandboxUnavailableError(
      `the apple/container VM ${name} did not start (\`container run\` exit ${run.exitCode}: ` +
        `${firstLine(run.stderr || run.stdout)}); check \`container system status\``,
    );
  }
  if (policy.network === "none") {
    const cut = await runCli(cli, containerNoNetworkArgs(name), {
      env: toolEnv(),
      timeoutMs: 30_000,
    });
    if (cut.exitCode !== 0) {
      await runCli(cli, ["delete", "--force", name], { env: toolEnv(), timeoutMs: 30_000 });
      throw new SandboxUnavailableError(
        `the apple/container VM ${name} kept its network (removing the default route failed: ` +
          `${firstLine(cut.stderr || cut.stdout)}); refusing to run commands in it`,
      );
    }
  }
}

/** Runs `argv` with `container exec` in the user's long-lived VM. */
export async function execWithContainer(
  cli: string,
  policy: SandboxPolicy,
  argv: readonly string[],
  options: ExecOptions & { timeoutMs: number },
): Promise<ExecResult> {
  refuseEnvironment(policy, "apple/container");
  if (policy.network !== "none") {
    throw new SandboxUnavailableError(
      `network "${policy.network}" is not available with the apple/container backend yet ` +
        '(only "none"); the policy proxy needs the Linux relay',
    );
  }
  const limits = containerLimits(policy);
  let workspace: string;
  try {
    workspace = realpathSync(policy.workspace);
  } catch {
    throw new SandboxPolicyError(`workspace: ${policy.workspace} does not exist`);
  }
  const name = containerName(workspace);
  const protectedPaths = protectedPathsIn(workspace, policy.protectedNames, policy.scanLimit);
  await ensureVm(cli, policy, workspace, name, protectedPaths);
  const env = buildEnvironment(policy, options.env);
  const run = await runCli(cli, containerExecArgs(name, env, argv, options.stdin !== undefined), {
    env: toolEnv(),
    stdin: options.stdin,
    timeoutMs: options.timeoutMs,
    maxOutputBytes: options.maxOutputBytes,
    signal: options.signal,
  });
  if (run.timedOut || options.signal?.aborted) {
    // Killing the client does not stop the command inside: stop the VM itself.
    await runCli(cli, ["kill", name], { env: toolEnv(), timeoutMs: 30_000 });
  }
  return execResultOf(run, limits);
}
