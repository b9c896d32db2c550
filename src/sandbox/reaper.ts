/**
 * Reaps sandbox inits without stealing anyone else's children: a SIGCHLD listener, then
 * `waitpid(pid, WNOHANG)` for each pid we started — never `waitpid(-1)`, which would take
 * `Deno.Command`'s or `child_process`'s children too.
 * @module
 */
import process from "node:process";
import type { Trampoline } from "./ffi.ts";

const waiting = new Map<number, (status: number) => void>();
let lib: Trampoline | undefined;
let listening = false;
// Signal listeners do not keep Deno's event loop alive, and the pipes may close before the
// init can be reaped (it exits only after the kernel has killed its namespace); this timer
// keeps the loop alive meanwhile and doubles as a fallback poll.
let keepAlive: ReturnType<typeof setInterval> | undefined;
const FALLBACK_POLL_MS = 50;
const statusBuffer = new Int32Array(1);

function poll(): void {
  for (const [pid, resolve] of waiting) {
    const r = lib!.coop_wait(pid, statusBuffer);
    if (r === pid || r < 0) {
      waiting.delete(pid);
      // r < 0 (ECHILD) cannot happen for a pid we own; report it as a SIGKILL death.
      resolve(r === pid ? statusBuffer[0] : 9);
    }
  }
  if (waiting.size === 0 && keepAlive !== undefined) {
    clearInterval(keepAlive);
    keepAlive = undefined;
  }
}

/** Resolves with the raw wait status once `pid` (a child we cloned) has exited. */
export function waitForExit(trampoline: Trampoline, pid: number): Promise<number> {
  lib = trampoline;
  const done = new Promise<number>((resolve) => waiting.set(pid, resolve));
  // Registered once and kept: re-registering per sandbox costs more than it saves, and a
  // signal listener does not keep the process alive.
  if (!listening) {
    process.on("SIGCHLD", poll);
    listening = true;
  }
  keepAlive ??= setInterval(poll, FALLBACK_POLL_MS);
  // It may have exited before the listener existed.
  poll();
  return done;
}

/** How many sandboxes are still waiting to be reaped (tests check for leaks). */
export function pendingReaps(): number {
  return waiting.size;
}
