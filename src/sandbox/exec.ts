/**
 * `exec()`: run one command in a fresh sandbox and collect its result.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { SandboxPolicyError } from "./errors.ts";
import { ERRNO, errnoName, errnoText } from "./errno.ts";
import { captureOutput } from "./output_capture.ts";
import type { AppliedLimits } from "./limits.ts";
import type { CgroupHost } from "./cgroup_host.ts";
import type { DiskQuotaReport } from "./disk_quota.ts";
import type { SandboxPolicy, SandboxPolicyInput } from "./policy.ts";
import type { StepName } from "./protocol.ts";
import type { ProxyDenial } from "./proxy/policy_proxy.ts";
import { type ProxyTestHooks, type SandboxCpuTime, spawnSandboxed } from "./spawn.ts";
import { execOnForeignBackend } from "./foreign_exec.ts";
import { type HostPlatform, hostPlatform } from "./platform.ts";

const log = getLogger(["coop", "sandbox"]);

/** Default cap on each of stdout and stderr. */
export const DEFAULT_MAX_OUTPUT_BYTES = 1 << 20;
/** Default wall-clock limit. */
export const DEFAULT_TIMEOUT_MS = 120_000;

/** Options for one `exec()` call. */
export interface ExecOptions {
  /** Wall-clock limit; the whole sandbox is killed when it passes. Default 120 s. */
  timeoutMs?: number;
  /** Bytes written to the command's stdin (then closed). Default: empty stdin. */
  stdin?: string | Uint8Array;
  /** Extra environment variables for this command. */
  env?: Record<string, string>;
  /** Working directory inside the sandbox: `/work` or a path below it (default `/work`). */
  cwd?: string;
  /** Cap on each of stdout and stderr; the rest is drained and dropped. Default 1 MiB. */
  maxOutputBytes?: number;
  /**
   * Fail this setup step on purpose (tests of the error path).
   * @ignore
   */
  failAt?: StepName;
  /**
   * The caller runs into limits or the proxy's policy on purpose (a probe): violations and
   * denials are logged at debug level.
   */
  expectViolations?: boolean;
  /**
   * Kills the whole sandbox when aborted (the result then reports `SIGKILL`). Aborted before the
   * command has started — waiting for another sandbox's upper layer, say — `exec()` rejects at
   * once with the signal's reason instead, and nothing ran.
   */
  signal?: AbortSignal;
  /**
   * With an environment root: how long to wait while another sandbox (of any process) has the
   * same upper layer mounted, before failing with `SandboxUpperInUseError`. Default 10 s.
   */
  upperWaitMs?: number;
  /**
   * Test hooks of network "proxy" (resolver, private addresses); production never sets them.
   * @ignore
   */
  proxy?: ProxyTestHooks;
  /**
   * The host as the backend choice sees it (tests drive the macOS backends with fakes);
   * default: this host.
   * @ignore
   */
  platform?: HostPlatform;
  /**
   * Test hook: plan the limits against this stand-in host; production never sets it.
   * @ignore
   */
  cgroupHost?: CgroupHost;
}

/** The outcome of a sandboxed command. */
export interface ExecResult {
  /** Exit code; `128 + n` when killed by signal n; 127 when the command was not found. */
  exitCode: number;
  /** The killing signal, e.g. `SIGKILL`, or null. */
  signal: string | null;
  /** True when the timeout ended the sandbox. */
  timedOut: boolean;
  /** Captured stdout (UTF-8, invalid bytes replaced). */
  stdout: string;
  /** Captured stderr, followed by Coop's note when the command could not be executed. */
  stderr: string;
  /** True when stdout or stderr hit `maxOutputBytes`. */
  truncated: boolean;
  /** Wall-clock time from spawn to the sandbox being gone. */
  durationMs: number;
  /** What the init reported having applied (Landlock ABI, seccomp). */
  hardening: { landlockAbi: number; seccomp: boolean };
  /** True when the kernel's OOM killer killed a process of this sandbox (cgroup paths only;
   * on the rlimit path an allocation over the limit fails inside instead). */
  oomKilled: boolean;
  /** True when a fork failed at the pids limit; null where the path cannot tell (rlimit). */
  pidsLimitHit: boolean | null;
  /** The resource limits applied, and by which path (`cgroup-v1`, `rlimit`, …). */
  limits: AppliedLimits;
  /**
   * CPU time the whole sandbox used (every process in it, background ones included), measured
   * by the kernel — not estimated from `durationMs` — as the `wait4` rusage of its init.
   */
  cpu: SandboxCpuTime;
  /** The workspace's disk/inode quota, its usage before and after, and what it stopped. */
  disk: DiskQuotaReport | null;
  /** Requests the policy proxy refused, in order (network "proxy"; empty otherwise). */
  proxyDenials: ProxyDenial[];
  /**
   * Connections the proxy refused (503) because the policy's `proxyMaxConnections` were open
   * at once (network "proxy"; 0 otherwise).
   */
  proxyRefusedConnections: number;
}

function positive(name: string, value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0) {
    throw new SandboxPolicyError(`${name} must be a positive number, got ${value}`);
  }
  return value;
}

/**
 * Each limit the command ran into becomes one warning-level event with structured fields
 * (debug-level when the caller hits the limit on purpose, as the status probe does).
 */
function logViolations(command: string, result: ExecResult, expected = false): void {
  const fields = { command, path: result.limits.path, durationMs: result.durationMs };
  const warn = expected ? log.debug.bind(log) : log.warn.bind(log);
  if (result.oomKilled) {
    warn("sandbox.limit.oom {command}: killed at {memoryBytes} bytes", {
      ...fields,
      memoryBytes: result.limits.memory?.bytes,
    });
  }
  if (result.pidsLimitHit) {
    warn("sandbox.limit.pids {command}: a fork failed at {pidsMax} processes", {
      ...fields,
      pidsMax: result.limits.pids?.max,
    });
  }
  if (result.disk?.exceeded) {
    warn("sandbox.limit.disk_quota {command}: the workspace is over its quota", {
      ...fields,
      killed: result.disk.killed,
      bytes: result.disk.after?.bytes,
      inodes: result.disk.after?.inodes,
      quotaBytes: result.disk.quotaBytes,
      inodeQuota: result.disk.inodeQuota,
    });
  }
  if (result.timedOut) {
    warn("sandbox.limit.timeout {command}: killed after {durationMs} ms", fields);
  }
}

/**
 * Runs `argv` (no shell unless you ask for one) in a new sandbox and waits for it.
 * Rejects with `SandboxSetupError` when the sandbox cannot be built, and with the signal's reason
 * when `options.signal` aborts before the command starts — either way the command never ran.
 *
 * @example
 * ```ts
 * const r = await exec({ workspace: "/tmp/ws" }, ["sh", "-c", "echo hello"], { timeoutMs: 5000 });
 * r.stdout; // "hello\n"
 * ```
 */
export async function exec(
  policy: SandboxPolicyInput | SandboxPolicy,
  argv: readonly string[],
  options: ExecOptions = {},
): Promise<ExecResult> {
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const limit = positive("maxOutputBytes", options.maxOutputBytes, DEFAULT_MAX_OUTPUT_BYTES);
  options.signal?.throwIfAborted();
  const platform = options.platform ?? hostPlatform();
  if (platform.os !== "linux") {
    return execOnForeignBackend(platform, policy, argv, {
      ...options,
      timeoutMs,
      maxOutputBytes: limit,
    });
  }
  const started = performance.now();
  const child = await spawnSandboxed(policy, argv, {
    env: options.env,
    cwd: options.cwd,
    stdin: options.stdin !== undefined,
    failAt: options.failAt,
    timeoutMs,
    proxy: options.proxy,
    cgroupHost: options.cgroupHost,
    expectViolations: options.expectViolations,
    upperWaitMs: options.upperWaitMs,
    signal: options.signal,
  });
  const kill = () => child.kill("SIGKILL");
  options.signal?.addEventListener("abort", kill, { once: true });
  if (options.signal?.aborted) kill();
  if (child.stdin && options.stdin !== undefined) child.stdin.end(options.stdin);
  const stdout = captureOutput(child.lib, child.stdout, child.fds.stdout, limit);
  const stderr = captureOutput(child.lib, child.stderr, child.fds.stderr, limit);
  let status: Awaited<typeof child.status>;
  try {
    status = await child.status;
  } finally {
    options.signal?.removeEventListener("abort", kill);
  }
  const [out, err] = await Promise.all([stdout, stderr]);
  const decoder = new TextDecoder();
  let stderrText = decoder.decode(err.bytes);
  if (status.execErrno !== null) {
    const what = status.execErrno === ERRNO.ENOENT
      ? "command not found"
      : status.execErrno === ERRNO.ENOEXEC
      ? "not a program this system runs (a script needs a #! line)"
      : errnoText(status.execErrno);
    stderrText += `coop: ${argv[0]}: ${what} (${errnoName(status.execErrno)})\n`;
  }
  const result: ExecResult = {
    exitCode: status.exitCode,
    signal: status.signal,
    timedOut: status.timedOut,
    stdout: decoder.decode(out.bytes),
    stderr: stderrText,
    truncated: out.truncated || err.truncated,
    durationMs: Math.round((performance.now() - started) * 100) / 100,
    hardening: status.hardening,
    oomKilled: status.oomKilled,
    pidsLimitHit: status.pidsLimitHit,
    limits: status.limits,
    cpu: status.cpu,
    disk: status.disk,
    proxyDenials: status.proxyDenials,
    proxyRefusedConnections: status.proxyRefusedConnections,
  };
  logViolations(argv[0], result, options.expectViolations);
  log.debug("sandbox.exec {command} exit={exitCode} {durationMs}ms", {
    command: argv[0],
    exitCode: result.exitCode,
    signal: result.signal,
    timedOut: result.timedOut,
    oomKilled: result.oomKilled,
    pidsLimitHit: result.pidsLimitHit,
    proxyDenials: result.proxyDenials.length,
    proxyRefusedConnections: result.proxyRefusedConnections,
    limitsPath: result.limits.path,
    cpuMs: result.cpu.userMs + result.cpu.systemMs,
    truncated: result.truncated,
    durationMs: result.durationMs,
  });
  return result;
}
