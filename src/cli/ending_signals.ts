/**
 * Signals that end coop while a sandboxed program of `coop run`, `coop shell` or `coop sandbox
 * exec` runs. Caught, not left to their default action: the sandbox is killed first, and coop
 * then finishes what follows the program — the workspace's scan for git traps it left
 * (run_scan.ts), the environment's writes, a throwaway workspace's removal, the owner's
 * terminal restored — before it exits with 128 + the signal's number. Ended by the default
 * action instead, a Ctrl-C on a piped `coop run` skipped that scan and left the traps armed.
 * Caught from before the sandbox starts until that after-work is done: a signal that comes while
 * the sandbox is being made ends its waits at once (`abort`, e.g. for another sandbox's upper
 * layer) or kills it as soon as it exists, and a second Ctrl-C cannot cut the scan short.
 * @module
 */
import { type SignalName, signalNumber } from "../sandbox/wait_status.ts";

const ENDING_SIGNALS = [
  "SIGTERM",
  "SIGHUP",
  "SIGINT",
  "SIGQUIT",
] as const satisfies readonly (Deno.Signal & SignalName)[];

/** A sandbox an ending signal kills (SIGKILL to its init: the whole pid namespace). */
export interface Killable {
  kill(signal: "SIGKILL"): void;
}

/** Why `EndingSignals.abort` aborted: an ending signal came before the sandbox started. */
export class EndedBeforeStart extends Error {
  constructor(readonly signal: SignalName) {
    super(`${signal} before the sandbox started; the command did not run`);
    this.name = "EndedBeforeStart";
  }
}

/** The ending signals, caught for one command (see the module's text). */
export interface EndingSignals {
  /** The first ending signal coop got, or null. */
  readonly signal: SignalName | null;
  /**
   * Aborted with an `EndedBeforeStart` by the first ending signal: for the waits before the
   * sandbox exists (`SpawnOptions.signal`).
   */
  readonly abort: AbortSignal;
  /** Kills `sandbox` on an ending signal from now on — at once when one came already. */
  attach(sandbox: Killable): void;
  /** 128 + the signal's number when one came, else `exitCode`. */
  exitCode(exitCode: number): number;
  /** Stops catching them (their default action again). */
  release(): void;
}

/**
 * Catches the ending signals until `release()`.
 *
 * @example
 * ```ts
 * const ending = catchEndingSignals();
 * try {
 *   const child = await spawnSandboxed(policy, argv, { signal: ending.abort });
 *   ending.attach(child);
 *   return ending.exitCode((await child.status).exitCode);
 * } finally {
 *   ending.release(); // after what must follow the program
 * }
 * ```
 */
export function catchEndingSignals(): EndingSignals {
  let caught: SignalName | null = null;
  let sandbox: Killable | null = null;
  const abort = new AbortController();
  const listeners = ENDING_SIGNALS.map((signal) => {
    const listener = () => {
      caught ??= signal;
      if (!abort.signal.aborted) abort.abort(new EndedBeforeStart(caught));
      sandbox?.kill("SIGKILL");
    };
    Deno.addSignalListener(signal, listener);
    return () => Deno.removeSignalListener(signal, listener);
  });
  return {
    get signal() {
      return caught;
    },
    abort: abort.signal,
    attach(killable) {
      sandbox = killable;
      if (caught) killable.kill("SIGKILL");
    },
    exitCode: (exitCode) => caught ? 128 + signalNumber(caught) : exitCode,
    release: () => listeners.forEach((remove) => remove()),
  };
}
