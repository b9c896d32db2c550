/**
 * `coop sandbox exec`: one command in a fresh sandbox from the command line, with the limits a
 * non-owner gets by default, its output streamed (or one JSON result).
 * @module
 */
import { parseArgs } from "node:util";
import type { Buffer } from "node:buffer";
import {
  cgroupHostWithDelegation,
  exec,
  NETWORK_MODES,
  type NetworkMode,
  resolvePolicy,
  SandboxError,
  SandboxPolicyError,
  type SandboxPolicyInput,
  SandboxSetupError,
  type SandboxStatus,
  spawnSandboxed,
} from "../sandbox/mod.ts";
import { parseByteSize } from "../sandbox/byte_size.ts";
import { releaseLoopQuota } from "../sandbox/loop_quota.ts";
import { parseDuration, timeoutProblem } from "../sandbox/duration.ts";
import { DEFAULT_MEMORY_BYTES, DEFAULT_PIDS_LIMIT } from "../config/sandbox_settings.ts";
import { callerPath } from "./caller_path.ts";
import { writeStderr } from "./stderr.ts";
import { printStdout, writeAllSync } from "./stdout.ts";
import { UsageError } from "./usage_error.ts";
import { catchEndingSignals, EndedBeforeStart, type EndingSignals } from "./ending_signals.ts";

/** Exit status when the timeout ended the sandbox (as coreutils `timeout`). */
export const EXIT_TIMEOUT = 124;
/** Exit status when the sandbox could not be built: the command did not run. */
export const EXIT_SANDBOX_FAILED = 125;

const DEFAULT_TIMEOUT = "120s";

const EXEC_OPTIONS = {
  workspace: { type: "string" },
  network: { type: "string" },
  timeout: { type: "string" },
  json: { type: "boolean" },
  "allow-domain": { type: "string", multiple: true },
  memory: { type: "string" },
  pids: { type: "string" },
  "disk-quota": { type: "string" },
  "inode-quota": { type: "string" },
} as const;

/**
 * Parses `--memory SIZE` (`256m`, `1g`, bytes) and `--pids N` into policy fields; the policy
 * itself checks the ranges.
 */
export function parseLimitFlags(
  memory: string | undefined,
  pids: string | undefined,
): { memoryBytes?: number; pidsLimit?: number } {
  const out: { memoryBytes?: number; pidsLimit?: number } = {};
  if (memory !== undefined) {
    const bytes = parseByteSize(memory);
    if (bytes === null || bytes === 0) {
      throw new UsageError(`--memory must be a size such as 256m or 1g (got "${memory}")`);
    }
    out.memoryBytes = bytes;
  }
  if (pids !== undefined) {
    if (!/^\d+$/.test(pids.trim()) || Number(pids) < 1) {
      throw new UsageError(`--pids must be a whole number of processes (got "${pids}")`);
    }
    out.pidsLimit = Number(pids);
  }
  return out;
}

/** Parses `--disk-quota SIZE` and `--inode-quota N` into policy fields (ranges: the policy). */
export function parseQuotaFlags(
  disk: string | undefined,
  inodes: string | undefined,
): { diskQuotaBytes?: number; inodeQuota?: number } {
  const out: { diskQuotaBytes?: number; inodeQuota?: number } = {};
  if (disk !== undefined) {
    const bytes = parseByteSize(disk);
    if (bytes === null || bytes <= 0) {
      throw new UsageError(`--disk-quota must be a size such as 100m or 2g (got "${disk}")`);
    }
    out.diskQuotaBytes = bytes;
  }
  if (inodes !== undefined) {
    if (!/^\d+$/.test(inodes.trim())) {
      throw new UsageError(`--inode-quota must be a whole number of files (got "${inodes}")`);
    }
    out.inodeQuota = Number(inodes);
  }
  return out;
}

/** Parses `--timeout DURATION` (`30s`, `500ms`, `2m`, seconds) within the timer's range. */
export function parseTimeoutFlag(text: string): number {
  const ms = parseDuration(text);
  if (ms === null) {
    throw new UsageError(`--timeout must be a duration such as 30s, 500ms or 2m (got "${text}")`);
  }
  const problem = timeoutProblem(ms);
  if (problem) throw new UsageError(`--timeout ${problem}`);
  return ms;
}

/** `coop sandbox exec`: one command in a fresh sandbox, as a non-owner with no limits gets it. */
export async function sandboxExecCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: EXEC_OPTIONS,
    allowPositionals: true,
    strict: true,
  });
  if (positionals.length === 0) throw new UsageError("sandbox exec needs a command after --");
  // As a non-owner with no limits configured gets (docs/limits.md "Defaults").
  const limits = {
    memoryBytes: DEFAULT_MEMORY_BYTES,
    pidsLimit: DEFAULT_PIDS_LIMIT,
    ...parseLimitFlags(values.memory, values.pids),
    ...parseQuotaFlags(values["disk-quota"], values["inode-quota"]),
  };
  const network = values.network ?? "none";
  if (!(NETWORK_MODES as readonly string[]).includes(network)) {
    throw new UsageError(`--network must be one of ${NETWORK_MODES.join(", ")} (got "${network}")`);
  }
  const allowDomains = values["allow-domain"] ?? [];
  const timeoutMs = parseTimeoutFlag(values.timeout ?? DEFAULT_TIMEOUT);
  const ownWorkspace = values.workspace === undefined;
  const workspace = ownWorkspace
    ? await Deno.makeTempDir({ prefix: "coop-ws-" })
    : callerPath(values.workspace!);
  const policy: SandboxPolicyInput = {
    workspace,
    network: network as NetworkMode,
    ...(allowDomains.length ? { allowDomains } : {}),
    ...limits,
  };
  // From here an ending signal (Ctrl-C) ends the sandbox, never the clean-up below.
  const ending = catchEndingSignals();
  try {
    checkFlags(policy);
    await cgroupHostWithDelegation();
    if (values.json) {
      const result = await exec(policy, positionals, { timeoutMs, signal: ending.abort });
      printStdout(JSON.stringify(result, null, 2) + "\n");
      return ending.signal
        ? ending.exitCode(result.exitCode)
        : result.timedOut
        ? EXIT_TIMEOUT
        : result.exitCode;
    }
    return await streamCommand(policy, positionals, { timeoutMs, ending });
  } catch (error) {
    if (error instanceof EndedBeforeStart) {
      writeStderr(`coop: ${error.message}\n`);
      return ending.exitCode(EXIT_SANDBOX_FAILED);
    }
    if (!(error instanceof SandboxError)) throw error;
    const where = error instanceof SandboxSetupError && error.step === "mount-workspace"
      ? ` (--workspace ${workspace})`
      : "";
    writeStderr(`coop: ${error.message}${where}\n`);
    return EXIT_SANDBOX_FAILED;
  } finally {
    try {
      if (ownWorkspace) {
        // A --disk-quota as root mounted the throwaway workspace's own image on it.
        await releaseLoopQuota(workspace);
        await Deno.remove(workspace, { recursive: true }).catch(() => {});
      }
    } finally {
      ending.release(); // whatever the clean-up threw: listeners left would keep coop alive
    }
  }
}

const FLAG_OF_FIELD: Record<string, string> = {
  memoryBytes: "--memory",
  pidsLimit: "--pids",
  diskQuotaBytes: "--disk-quota",
  inodeQuota: "--inode-quota",
  allowDomains: "--allow-domain",
};

/** A limit out of range is a usage mistake (exit 2), named by its flag. */
function checkFlags(policy: SandboxPolicyInput): void {
  try {
    resolvePolicy(policy);
  } catch (error) {
    if (!(error instanceof SandboxPolicyError)) throw error;
    const message = error.message.replace(
      /^invalid sandbox policy: (\w+)(\.\d+)?:/,
      (_, field) => `${FLAG_OF_FIELD[field] ?? field}:`,
    );
    throw new UsageError(message);
  }
}

/** One line per limit the command ran into, for the streaming mode's stderr. */
function violationNotes(status: SandboxStatus): string {
  let text = "";
  if (status.oomKilled) {
    text += `coop: out of memory: a process was killed at the ${
      status.limits.memory?.bytes ?? "?"
    }-byte limit (${status.limits.path})\n`;
  }
  if (status.pidsLimitHit) {
    text += `coop: process limit reached: a fork failed at ${status.limits.pids?.max} ` +
      `processes (${status.limits.path})\n`;
  }
  if (status.disk?.exceeded) {
    const d = status.disk;
    text += `coop: the workspace is over its quota (${d.after?.bytes} bytes, ${d.after?.inodes} ` +
      `files${d.killed ? "; the sandbox was killed when it went over" : ""}); the next ` +
      "command will be refused until files are deleted\n";
  }
  for (const d of status.proxyDenials) {
    text += `coop: proxy denied ${d.host}:${d.port}: ${d.reason}\n`;
  }
  if (status.proxyRefusedConnections > 0) {
    text += `coop: proxy refused ${status.proxyRefusedConnections} connection(s): more were ` +
      "open at once than the sandbox's connection cap allows\n";
  }
  return text;
}

/**
 * Runs with stdio passed through as it happens (also `coop run` without a terminal); `ending`
 * (caught by the caller, released after its own after-work) kills the sandbox on Ctrl-C.
 */
export async function streamCommand(
  policy: SandboxPolicyInput,
  argv: string[],
  { timeoutMs, ending }: { timeoutMs: number; ending: EndingSignals },
): Promise<number> {
  const child = await spawnSandboxed(policy, argv, {
    stdin: true,
    timeoutMs,
    signal: ending.abort,
  });
  ending.attach(child);
  const forward = (stream: typeof child.stdout, file: typeof Deno.stdout) =>
    new Promise<void>((done) => {
      stream.on("data", (chunk: Buffer) => writeAllSync(file, chunk));
      stream.on("error", () => {});
      stream.on("close", () => done());
    });
  const outputs = Promise.all([
    forward(child.stdout, Deno.stdout),
    forward(child.stderr, Deno.stderr),
  ]);
  void (async () => {
    try {
      for await (const chunk of Deno.stdin.readable) child.stdin!.write(chunk);
    } catch {
      // stdin closed or unreadable: the command just sees EOF.
    }
    child.stdin!.end();
  })();
  const status = await child.status;
  await outputs;
  if (status.execErrno !== null) {
    writeStderr(`coop: ${argv[0]}: command not found or not executable\n`);
  }
  writeStderr(violationNotes(status));
  if (ending.signal) {
    writeStderr(`coop: ${ending.signal}: the sandbox was killed\n`);
    return ending.exitCode(status.exitCode);
  }
  if (status.timedOut) {
    writeStderr(`coop: timed out after ${timeoutMs} ms; the sandbox was killed\n`);
    return EXIT_TIMEOUT;
  }
  return status.exitCode;
}
