/**
 * Decoding of raw wait statuses and signal names.
 * @module
 */

const SIGNALS: Record<number, Deno.Signal> = {
  1: "SIGHUP",
  2: "SIGINT",
  3: "SIGQUIT",
  4: "SIGILL",
  5: "SIGTRAP",
  6: "SIGABRT",
  7: "SIGBUS",
  8: "SIGFPE",
  9: "SIGKILL",
  10: "SIGUSR1",
  11: "SIGSEGV",
  12: "SIGUSR2",
  13: "SIGPIPE",
  14: "SIGALRM",
  15: "SIGTERM",
  24: "SIGXCPU",
  25: "SIGXFSZ",
  31: "SIGSYS",
};

/** `SIGKILL` for 9; unknown numbers become `SIG<n>`. */
export function signalName(signo: number): string {
  return SIGNALS[signo] ?? `SIG${signo}`;
}

/** The number of a signal name such as `SIGTERM`. */
export function signalNumber(name: Deno.Signal): number {
  for (const [n, s] of Object.entries(SIGNALS)) if (s === name) return Number(n);
  throw new RangeError(`unsupported signal ${name}`);
}

/** Exit code the way a shell reports it (`128 + signal` when killed) and the signal, if any. */
export function decodeWaitStatus(status: number): { exitCode: number; signal: string | null } {
  const termsig = status & 0x7f;
  if (termsig === 0) return { exitCode: (status >> 8) & 0xff, signal: null };
  return { exitCode: 128 + termsig, signal: signalName(termsig) };
}
