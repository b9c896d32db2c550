/**
 * Decoding of raw wait statuses, and signal names from the runtime's table (`os.constants`).
 * @module
 */
import { constants } from "node:os";

/** A signal's name, e.g. `SIGTERM` (the names `node:os` lists for this platform). */
export type SignalName = `SIG${string}`;

/** Signal numbers by name on this platform, e.g. `SIGUSR1` → 10. */
const SIGNALS = constants.signals as Readonly<Record<string, number>>;

/** Names by number; of two names for one signal (SIGABRT/SIGIOT) the first listed wins. */
const NAME_OF = new Map<number, string>();
for (const [name, signo] of Object.entries(SIGNALS)) {
  if (!NAME_OF.has(signo)) NAME_OF.set(signo, name);
}

/** `SIGKILL` for 9; numbers without a name (real-time signals) become `SIG<n>`. */
export function signalName(signo: number): string {
  return NAME_OF.get(signo) ?? `SIG${signo}`;
}

/** The number of a signal name such as `SIGTERM`; throws RangeError for an unknown name. */
export function signalNumber(name: string): number {
  if (!Object.hasOwn(SIGNALS, name)) throw new RangeError(`unsupported signal ${name}`);
  return SIGNALS[name];
}

/** Exit code the way a shell reports it (`128 + signal` when killed) and the signal, if any. */
export function decodeWaitStatus(status: number): { exitCode: number; signal: string | null } {
  const termsig = status & 0x7f;
  if (termsig === 0) return { exitCode: (status >> 8) & 0xff, signal: null };
  return { exitCode: 128 + termsig, signal: signalName(termsig) };
}
