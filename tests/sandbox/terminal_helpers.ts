/**
 * Running a command on a sandbox's pseudo-terminal in tests: the whole output as the terminal
 * showed it, and a way to wait for text in it.
 * @module
 */
import { type SpawnOptions, spawnSandboxed } from "../../src/sandbox/spawn.ts";
import type { SandboxProcess, SandboxStatus } from "../../src/sandbox/spawn.ts";

/** A command on a pty, with its output so far. */
export interface TerminalRun {
  readonly child: SandboxProcess;
  /** Everything the terminal has shown so far. */
  output(): string;
  /** Resolves once the output matches `pattern` (rejects after `ms`, quoting the output). */
  waitFor(pattern: RegExp, ms?: number): Promise<void>;
  /** Types `text` (sent through the line discipline, like keys). */
  type(text: string): void;
  /** The status, once the output relay has ended too (all output read). */
  finished(): Promise<SandboxStatus>;
}

/** Starts `argv` in a sandbox on a `rows` x `cols` pty. */
export async function onTerminal(
  workspace: string,
  argv: string[],
  size = { rows: 24, cols: 80 },
  options: SpawnOptions = {},
): Promise<TerminalRun> {
  const child = await spawnSandboxed({ workspace }, argv, {
    timeoutMs: 20_000,
    ...options,
    terminal: size,
  });
  const socket = child.terminal!.socket;
  let text = "";
  const waiters = new Set<() => void>();
  socket.on("data", (chunk: Uint8Array) => {
    text += new TextDecoder().decode(chunk);
    for (const waiter of waiters) waiter();
  });
  const closed = new Promise<void>((resolve) => socket.on("close", () => resolve()));
  socket.on("error", () => {});
  return {
    child,
    output: () => text,
    type: (keys) => void socket.write(keys),
    waitFor(pattern, ms = 10_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!pattern.test(text)) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${pattern} in ${JSON.stringify(text)}`));
        }, ms);
        waiters.add(check);
        check();
      });
    },
    async finished() {
      const status = await child.status;
      await closed;
      return status;
    },
  };
}
