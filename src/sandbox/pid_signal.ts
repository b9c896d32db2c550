/**
 * Signals a process found by pid (a live session's init listed in a file), never another that
 * reused the pid: the signal goes through a pidfd opened first, and only if the process it names
 * is still the one the caller knows (`isSame`, e.g. its start time, checked after the open).
 * @module
 */
import type { Trampoline } from "./ffi.ts";

/**
 * Sends `signal` (any number: real-time ones too) to `pid` if `isSame()` holds once a pidfd for
 * it is open; returns whether it was sent (false: the process is gone or is another one).
 *
 * @example
 * ```ts
 * const sent = signalIfSame(await loadTrampoline(), 4242, () => startTime(4242) === known, 9);
 * ```
 */
export function signalIfSame(
  lib: Trampoline,
  pid: number,
  isSame: () => boolean,
  signal: number,
): boolean {
  const pidfd = lib.coop_pidfd_open(pid);
  if (pidfd < 0) return false; // ESRCH: gone
  try {
    return isSame() && lib.coop_kill(pidfd, signal) === 0;
  } finally {
    lib.coop_close(pidfd);
  }
}
