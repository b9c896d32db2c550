/**
 * Runs the owner's `bash` on the host with `sh -c`: same result shape as the sandbox.
 * @module
 */
import { Buffer } from "node:buffer";
import type { CommandResult } from "./tool_contract.ts";
import { signalNumber } from "../sandbox/wait_status.ts";
import { OUTPUT_GRACE_MS } from "../sandbox/cli_process.ts";

/** Options for one host command. */
export interface HostRunOptions {
  /** Working directory. */
  cwd: string;
  /** Wall-clock limit; the command is killed with SIGKILL when it passes. */
  timeoutMs: number;
  /** The complete environment of the command (nothing else is inherited). */
  env: Record<string, string>;
  /** Cap on each of stdout and stderr. */
  maxOutputBytes: number;
  /** Kills the command (SIGKILL) when aborted. */
  signal?: AbortSignal;
}

/** Runs a shell command on the host. */
export type HostRunner = (command: string, options: HostRunOptions) => Promise<CommandResult>;

/** Runs a program with its arguments on the host, no shell (`exec`). */
export type HostArgvRunner = (
  argv: readonly string[],
  options: HostRunOptions,
) => Promise<CommandResult>;

/** Reads `stream` to its end, or until `stop` settles (what was read by then is kept). */
async function collect(
  stream: ReadableStream<Uint8Array>,
  limit: number,
  stop: Promise<void>,
): Promise<{ text: string; truncated: boolean }> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  let truncated = false;
  const reader = stream.getReader();
  void stop.then(() => reader.cancel().catch(() => {}));
  try {
    // Keep draining past the cap so the child never blocks on a full pipe.
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      const chunk = read.value;
      if (size >= limit) {
        truncated = true;
        continue;
      }
      const room = limit - size;
      if (chunk.length > room) truncated = true;
      chunks.push(chunk.subarray(0, room));
      size += Math.min(chunk.length, room);
    }
  } finally {
    reader.releaseLock();
  }
  return { text: new TextDecoder().decode(Buffer.concat(chunks, size)), truncated };
}

/** The default host runner: `sh -c command` through `runArgvOnHost`. */
export const runOnHost: HostRunner = (command, options) =>
  runArgvOnHost(["sh", "-c", command], options);

/** The default argv runner, built on `Deno.Command`; a program not found exits 127. */
export const runArgvOnHost: HostArgvRunner = async (argv, options) => {
  options.signal?.throwIfAborted();
  const started = performance.now();
  let child: Deno.ChildProcess;
  try {
    child = spawnOnHost(argv, options);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    return {
      exitCode: 127,
      signal: null,
      timedOut: false,
      stdout: "",
      stderr: `coop: ${argv[0]}: command not found\n`,
      truncated: false,
      durationMs: performance.now() - started,
    };
  }
  let timedOut = false;
  let stopReading = () => {};
  const stopped = new Promise<void>((resolve) => stopReading = resolve);
  let grace: ReturnType<typeof setTimeout> | undefined;
  const kill = () => {
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch {
      // Already exited between the timer (or the abort) firing and the kill.
    }
    grace ??= setTimeout(stopReading, OUTPUT_GRACE_MS);
  };
  const timer = setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);
  options.signal?.addEventListener("abort", kill, { once: true });
  try {
    const [stdout, stderr, status] = await Promise.all([
      collect(child.stdout, options.maxOutputBytes, stopped),
      collect(child.stderr, options.maxOutputBytes, stopped),
      child.status,
    ]);
    return {
      exitCode: status.signal ? 128 + signalNumber(status.signal) : status.code,
      signal: status.signal,
      timedOut,
      stdout: stdout.text,
      stderr: stderr.text,
      truncated: stdout.truncated || stderr.truncated,
      durationMs: performance.now() - started,
    };
  } finally {
    clearTimeout(timer);
    clearTimeout(grace);
    stopReading();
    options.signal?.removeEventListener("abort", kill);
  }
};

function spawnOnHost(argv: readonly string[], options: HostRunOptions): Deno.ChildProcess {
  return new Deno.Command(argv[0], {
    args: argv.slice(1),
    cwd: options.cwd,
    env: options.env,
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    // setsid() in the child: the shell leads its own session and process group, so the kill
    // below reaches what it started too (`sleep` in `sh -c "sleep 30"` would otherwise keep
    // running and hold the output pipes open), and nothing of Coop's own group is hit.
    detached: true,
  }).spawn();
}
