/**
 * A sandboxed program on the owner's terminal (`coop run` and `coop shell` when stdin is a
 * terminal): the owner's terminal in raw mode, every key relayed to the program's own pty —
 * whose line discipline turns Ctrl-C, Ctrl-Z and Ctrl-D into what the program expects — its
 * output relayed back, the size kept in step (SIGWINCH), and the owner's terminal settings
 * restored on every way out: the program's exit, its sandbox killed, a signal to coop, an
 * exception.
 * @module
 */
import { spawnSandboxed } from "../sandbox/spawn.ts";
import { rawTerminal } from "../sandbox/terminal.ts";
import type { SandboxPolicyInput } from "../sandbox/mod.ts";
import type { SignalName } from "../sandbox/wait_status.ts";
import type { EndingSignals } from "./ending_signals.ts";
import { writeStderr } from "./stderr.ts";

/** Writes all of `bytes` to stdout (a terminal may take them in pieces). */
function writeStdout(bytes: Uint8Array): void {
  try {
    for (let at = 0; at < bytes.length;) at += Deno.stdout.writeSync(bytes.subarray(at));
  } catch {
    // The owner's terminal is gone (hang-up): the program still gets to end.
  }
}

/** The owner's terminal size, or a conventional one when stdout is not a terminal. */
function ownerSize(): { rows: number; cols: number } {
  try {
    const { columns, rows } = Deno.consoleSize();
    if (rows > 0 && columns > 0) return { rows, cols: columns };
  } catch {
    // stdout redirected: the program still gets a terminal of its own
  }
  return { rows: 24, cols: 80 };
}

/** What ended the program: its status, and a signal coop itself got (then 128 + n). */
export interface TerminalOutcome {
  /** The program's exit code (128 + n when a signal killed it). */
  exitCode: number;
  /** The signal sent to coop that ended the session, if one did. */
  coopSignal: SignalName | null;
  /** The program could not be executed (not found: 127, not executable: 126). */
  execErrno: number | null;
  /** The sandbox's wall-clock limit ended it. */
  timedOut: boolean;
}

/**
 * Runs `argv` in the sandbox of `policy` on a pty sized like the owner's terminal, relaying
 * both ways with the owner's terminal raw; restores it whatever happens. `ending` (caught by
 * the caller, released after its own after-work) kills the sandbox on an ending signal.
 */
export async function runOnTerminal(
  policy: SandboxPolicyInput,
  argv: readonly string[],
  options: { env?: Record<string, string>; timeoutMs?: number; ending: EndingSignals },
): Promise<TerminalOutcome> {
  const { ending } = options;
  const child = await spawnSandboxed(policy, argv, {
    env: options.env,
    timeoutMs: options.timeoutMs,
    terminal: ownerSize(),
    signal: ending.abort,
  });
  ending.attach(child);
  const terminal = child.terminal!;
  const onWinch = () => {
    const { rows, cols } = ownerSize();
    terminal.resize(rows, cols);
  };
  Deno.addSignalListener("SIGWINCH", onWinch);
  const output = new Promise<void>((done) => {
    terminal.socket.on("data", (chunk: Uint8Array) => writeStdout(chunk));
    terminal.socket.on("error", () => done());
    terminal.socket.on("close", () => done());
  });
  let restore = () => {};
  try {
    // Not Deno.stdin.setRaw: it leaves output processing on, and the owner's terminal would
    // add a second CR to every newline the program's pty already translated.
    restore = await rawTerminal(0);
    const input = Deno.stdin.readable.getReader();
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await input.read();
          if (done) break;
          terminal.socket.write(value);
        }
      } catch {
        // stdin gone: the program sees no more keys, and ends as it will
      }
    })();
    const status = await child.status;
    await output;
    input.releaseLock();
    return {
      exitCode: ending.exitCode(status.exitCode),
      coopSignal: ending.signal,
      execErrno: status.execErrno,
      timedOut: status.timedOut,
    };
  } finally {
    restore();
    Deno.removeSignalListener("SIGWINCH", onWinch);
    if (ending.signal === null) child.kill("SIGKILL"); // an exception: never leave it running
    terminal.socket.destroy();
  }
}

/** Prints why a terminal session ended, when it was not the program's own exit. */
export function reportOutcome(argv0: string, outcome: TerminalOutcome): void {
  if (outcome.execErrno !== null) {
    writeStderr(`coop: ${argv0}: command not found or not executable\n`);
  }
  if (outcome.coopSignal) {
    writeStderr(`coop: ${outcome.coopSignal}: the sandbox was killed\n`);
  }
}
