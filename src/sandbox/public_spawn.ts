/**
 * `spawn()` of the public API: a running sandbox with its streams, without the internals
 * `spawnSandboxed()` hands Coop's own callers (the FFI library, raw pipe fds, test hooks).
 * @module
 */
import type net from "node:net";
import type { AppliedLimits } from "./limits.ts";
import type { SandboxPolicyInput } from "./policy.ts";
import { type SandboxStatus, spawnSandboxed } from "./spawn.ts";
import type { SignalName } from "./wait_status.ts";
import type { SandboxTerminal, TerminalSize } from "./terminal.ts";

/** Options of {@link spawn}. */
export interface SpawnSandboxOptions {
  /** Extra environment variables (added to the allowlisted base). */
  env?: Record<string, string>;
  /** Give the command a stdin pipe; otherwise it reads EOF. */
  stdin?: boolean;
  /** Run the command on a pseudo-terminal of this size instead of pipes (see `terminal`). */
  terminal?: TerminalSize;
  /** Wall-clock limit: the whole sandbox is killed when it passes (`timedOut` in the status). */
  timeoutMs?: number;
}

/** A command running in its sandbox. */
export interface RunningSandbox {
  /** The sandbox init's pid on the host. */
  readonly pid: number;
  /** The command's stdin (when requested with `stdin: true`), else null. */
  readonly stdin: net.Socket | null;
  /** The command's stdout. */
  readonly stdout: net.Socket;
  /** The command's stderr. */
  readonly stderr: net.Socket;
  /** The command's terminal (its output and input, and `resize`) when started with one. */
  readonly terminal: SandboxTerminal | null;
  /** Settles once the sandbox is gone; rejects with SandboxSetupError if setup failed. */
  readonly status: Promise<SandboxStatus>;
  /** The resource limits applied, and by which path. */
  readonly limits: AppliedLimits;
  /** Signals the command (forwarded by the init); `SIGKILL` ends the whole sandbox. */
  kill(signal?: SignalName): void;
}

/**
 * Starts `argv` in a new sandbox and returns at once with its streams and a status promise.
 *
 * @example
 * ```ts
 * const child = await spawn({ workspace: "/tmp/ws" }, ["cat"], { stdin: true });
 * child.stdout.on("data", (chunk) => console.log(String(chunk)));
 * child.stdin?.end("hello\n");
 * console.log((await child.status).exitCode); // 0
 * ```
 */
export async function spawn(
  policy: SandboxPolicyInput,
  argv: readonly string[],
  options: SpawnSandboxOptions = {},
): Promise<RunningSandbox> {
  const { env, stdin, terminal, timeoutMs } = options;
  const child = await spawnSandboxed(policy, argv, { env, stdin, terminal, timeoutMs });
  return {
    pid: child.pid,
    stdin: child.stdin,
    stdout: child.stdout,
    stderr: child.stderr,
    terminal: child.terminal,
    status: child.status,
    limits: child.limits,
    kill: (signal) => child.kill(signal),
  };
}
