/**
 * `coop sandbox status|exec`: the sandbox from the command line, exactly as a non-owner
 * gets it.
 * @module
 */
import { parseArgs } from "node:util";
import type { Buffer } from "node:buffer";
import {
  cgroupHostWithDelegation,
  exec,
  lastSelfTest,
  NETWORK_MODES,
  type NetworkMode,
  probe,
  type ProbeReport,
  resolvePolicy,
  SandboxError,
  SandboxPolicyError,
  type SandboxPolicyInput,
  SandboxSetupError,
  type SandboxStatus,
  selfTest,
  type SelfTestResult,
  spawnSandboxed,
} from "../sandbox/mod.ts";
import { parseByteSize } from "../sandbox/byte_size.ts";
import { releaseLoopQuota } from "../sandbox/loop_quota.ts";
import { parseDuration, timeoutProblem } from "../sandbox/duration.ts";
import { DEFAULT_MEMORY_BYTES, DEFAULT_PIDS_LIMIT } from "../config/sandbox_settings.ts";
import { callerPath } from "./caller_path.ts";
import { writeStderr } from "./stderr.ts";
import { UsageError } from "./usage_error.ts";
import { sandboxCleanCommand, sandboxResetCommand } from "./sandbox_reset_command.ts";
import { renderEnvironments, statusEnvironments } from "./sandbox_environments_status.ts";

/** Exit status when the timeout ended the sandbox (as coreutils `timeout`). */
export const EXIT_TIMEOUT = 124;
/** Exit status when the sandbox could not be built: the command did not run. */
export const EXIT_SANDBOX_FAILED = 125;

const DEFAULT_TIMEOUT = "120s";
const encoder = new TextEncoder();

function writeAll(file: { writeSync(p: Uint8Array): number }, bytes: Uint8Array): void {
  let offset = 0;
  while (offset < bytes.length) offset += file.writeSync(bytes.subarray(offset));
}

function print(text: string): void {
  writeAll(Deno.stdout, encoder.encode(text));
}

const printError = writeStderr;

/** The human `coop sandbox status`: one ✓/✗ line per measured check, or why it is unavailable. */
export function renderStatus(report: ProbeReport): string {
  const p = report.platform;
  const backend = report.backend ? `, backend ${report.backend}` : "";
  const lines = [
    `Coop sandbox: ${p.os} ${p.arch}, kernel ${p.kernel}, invoked as uid ${p.uid}${backend}`,
  ];
  if (report.note) lines.push(`  note: ${report.note}`);
  if (!report.available) {
    lines.push(`  ✗ unavailable: ${report.error}`);
    for (const check of report.checks) lines.push(`  ✗ ${check.label}: ${check.evidence}`);
    lines.push("  Non-owner commands will be refused (fail closed).");
    return lines.join("\n") + "\n";
  }
  if (report.disabledLayers?.length) {
    lines.push(`  ⚠ DEBUG LIBRARY built without: ${report.disabledLayers.join(", ")}`);
  }
  const width = Math.max(...report.checks.map((c) => c.label.length));
  for (const check of report.checks) {
    lines.push(`  ${check.ok ? "✓" : "✗"} ${check.label.padEnd(width)}  ${check.evidence}`);
  }
  lines.push(`  measured in a probe sandbox that took ${report.durationMs?.toFixed(1)} ms`);
  return lines.join("\n") + "\n";
}

function renderLastSelfTest(last: SelfTestResult | undefined): string {
  if (!last) return "  self-test: never run with this sandbox library (coop sandbox test)\n";
  const failed = last.checks.filter((c) => !c.ok).map((c) => c.id);
  const verdict = last.passed
    ? "passed"
    : `FAILED${failed.length ? `: ${failed.join(", ")}` : `: ${last.error}`}`;
  return `  last self-test (${last.at}): ${verdict}\n`;
}

async function statusCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { json: { type: "boolean" }, config: { type: "string" } },
    strict: true,
  });
  await cgroupHostWithDelegation();
  const report = await probe();
  const last = await lastSelfTest();
  const environments = await statusEnvironments(values.config);
  print(
    values.json
      ? JSON.stringify({ ...report, lastSelfTest: last ?? null, environments }, null, 2) + "\n"
      : renderStatus(report) + renderLastSelfTest(last) + renderEnvironments(environments),
  );
  return report.available ? 0 : 1;
}

async function testCommand(args: string[]): Promise<number> {
  const { values } = parseArgs({ args, options: { json: { type: "boolean" } }, strict: true });
  const result = await selfTest();
  if (values.json) {
    print(JSON.stringify(result, null, 2) + "\n");
  } else {
    if (result.error) print(`  ✗ the sandbox could not start: ${result.error}\n`);
    for (const check of result.checks) {
      print(`  ${check.ok ? "✓" : "✗ ESCAPE"} ${check.name} — ${check.detail}\n`);
    }
    print(result.passed ? "sandbox self-test passed\n" : "sandbox self-test FAILED\n");
  }
  return result.passed ? 0 : 1;
}

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

async function execCommand(args: string[]): Promise<number> {
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
  try {
    checkFlags(policy);
    await cgroupHostWithDelegation();
    if (values.json) {
      const result = await exec(policy, positionals, { timeoutMs });
      print(JSON.stringify(result, null, 2) + "\n");
      return result.timedOut ? EXIT_TIMEOUT : result.exitCode;
    }
    return await streamCommand(policy, positionals, timeoutMs);
  } catch (error) {
    if (!(error instanceof SandboxError)) throw error;
    const where = error instanceof SandboxSetupError && error.step === "mount-workspace"
      ? ` (--workspace ${workspace})`
      : "";
    printError(`coop: ${error.message}${where}\n`);
    return EXIT_SANDBOX_FAILED;
  } finally {
    if (ownWorkspace) {
      // A --disk-quota as root mounted the throwaway workspace's own image on it.
      await releaseLoopQuota(workspace);
      await Deno.remove(workspace, { recursive: true }).catch(() => {});
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

/** Runs with stdio passed through as it happens. */
async function streamCommand(
  policy: SandboxPolicyInput,
  argv: string[],
  timeoutMs: number,
): Promise<number> {
  const child = await spawnSandboxed(policy, argv, { stdin: true, timeoutMs });
  const forward = (stream: typeof child.stdout, file: typeof Deno.stdout) =>
    new Promise<void>((done) => {
      stream.on("data", (chunk: Buffer) => writeAll(file, chunk));
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
    printError(`coop: ${argv[0]}: command not found or not executable\n`);
  }
  printError(violationNotes(status));
  if (status.timedOut) {
    printError(`coop: timed out after ${timeoutMs} ms; the sandbox was killed\n`);
    return EXIT_TIMEOUT;
  }
  return status.exitCode;
}

/** Dispatches `coop sandbox <sub>`; returns the process exit status. */
export function sandboxCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "status") return statusCommand(rest);
  if (sub === "exec") return execCommand(rest);
  if (sub === "test") return testCommand(rest);
  if (sub === "reset") return sandboxResetCommand(rest);
  if (sub === "clean") return sandboxCleanCommand(rest);
  throw new UsageError(
    sub
      ? `unknown sandbox command "${sub}"`
      : "sandbox needs a command: status, test, exec, reset, clean",
  );
}
