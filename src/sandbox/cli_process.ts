/**
 * Runs a backend's command-line tool (`sandbox-exec`, `container`) as a child process in its
 * own process group, with a timeout that kills the whole group, stdin, and capped output.
 * @module
 */
import { spawn } from "node:child_process";
import process from "node:process";
import { signalNumber } from "./wait_status.ts";

/** How a tool run ended. */
export interface CliResult {
  /** The exit code; `128 + n` when killed by signal n; 127 when the tool could not start. */
  exitCode: number;
  /** The killing signal, or null. */
  signal: string | null;
  /** Captured stdout (up to the cap). */
  stdout: string;
  /** Captured stderr (up to the cap), or why the tool could not be started. */
  stderr: string;
  /** True when the timeout killed it. */
  timedOut: boolean;
  /** True when stdout or stderr hit the cap. */
  truncated: boolean;
  /** Wall-clock milliseconds. */
  durationMs: number;
}

/** Options of {@link runCli}. */
export interface CliOptions {
  /** The child's whole environment. */
  env?: Record<string, string>;
  /** Working directory. */
  cwd?: string;
  /** Bytes for stdin (then closed); default: stdin reads EOF. */
  stdin?: string | Uint8Array;
  /** Kill the process group after this many milliseconds. */
  timeoutMs?: number;
  /** Cap on each of stdout and stderr; default 1 MiB. */
  maxOutputBytes?: number;
  /** Kills the process group when aborted. */
  signal?: AbortSignal;
}

/** The environment the tools themselves run with: a system PATH and HOME (never a secret). */
export function toolEnv(): Record<string, string> {
  return { PATH: "/usr/bin:/bin:/usr/sbin:/sbin", HOME: process.env.HOME ?? "/" };
}

/**
 * After a command's process group is killed, how long its output pipes may stay open: a process
 * that left the group (`setsid`, a daemon) survives the kill and may hold them for good. Also
 * the host runner's (src/tools/host_runner.ts).
 */
export const OUTPUT_GRACE_MS = 2000;

/** Runs `path args…` and resolves when it has exited and its pipes are closed. */
export function runCli(
  path: string,
  args: readonly string[],
  options: CliOptions = {},
): Promise<CliResult> {
  const limit = options.maxOutputBytes ?? 1 << 20;
  const started = performance.now();
  return new Promise((resolve) => {
    const child = spawn(path, args, {
      env: options.env ?? {},
      cwd: options.cwd,
      stdio: ["pipe", "pipe", "pipe"],
      // Its own process group, so that a timeout kills what the tool started too.
      detached: true,
    });
    let timedOut = false, truncated = false, startError: Error | undefined;
    const collect = (stream: NodeJS.ReadableStream | null) => {
      const chunks: Buffer[] = [];
      let size = 0;
      stream?.on("data", (chunk: Buffer) => {
        if (size >= limit) return void (truncated = true);
        chunks.push(chunk.subarray(0, limit - size));
        size += Math.min(chunk.length, limit - size);
      });
      return chunks;
    };
    const out = collect(child.stdout), err = collect(child.stderr);
    let grace: ReturnType<typeof setTimeout> | undefined;
    const killGroup = () => {
      try {
        if (child.pid !== undefined) process.kill(-child.pid, "SIGKILL");
      } catch {
        // already gone
      }
      // A process that left the group (setsid, a daemon) survives the kill and may hold the
      // output pipes open for good: stop reading them a moment later.
      grace ??= setTimeout(() => {
        child.stdout?.destroy();
        child.stderr?.destroy();
      }, OUTPUT_GRACE_MS);
    };
    const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => {
      timedOut = true;
      killGroup();
    }, options.timeoutMs);
    options.signal?.addEventListener("abort", killGroup, { once: true });
    child.stdin?.on("error", () => {}); // EPIPE when the command does not read its input
    child.stdin?.end(options.stdin ?? "");
    child.on("error", (error) => (startError = error));
    child.on("close", (code, signal) => {
      clearTimeout(timer);
      clearTimeout(grace);
      options.signal?.removeEventListener("abort", killGroup);
      const stderr = Buffer.concat(err).toString("utf8");
      resolve({
        exitCode: startError ? 127 : code ?? 128 + signalNumber(signal ?? "SIGKILL"),
        signal: startError ? null : signal,
        stdout: Buffer.concat(out).toString("utf8"),
        stderr: startError ? `${stderr}cannot start ${path}: ${startError.message}\n` : stderr,
        timedOut,
        truncated,
        durationMs: Math.round((performance.now() - started) * 100) / 100,
      });
    });
  });
}
