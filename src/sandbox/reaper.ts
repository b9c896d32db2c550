/**
 * Reaps sandbox inits without stealing anyone else's children: a SIGCHLD listener, then
 * `wait4(pid, WNOHANG)` for each pid we started — never `waitpid(-1)`, which would take
 * `Deno.Command`'s or `child_process`'s children too.
 * @module
 */
import process from "node:process";
import type { Trampoline } from "./ffi.ts";

/**
 * CPU time a whole sandbox used, measured by the kernel: the `wait4` rusage of its init, which
 * includes every process of the sandbox: the init reaps them all, and kills and reaps those
 * left when the command ends or the gateway ends the sandbox (ffi/init/main.c `end_all`). Only
 * when the init must be killed outright (it did not end within a grace period) are the
 * processes it had not yet reaped missing — and a process whose parent ignored SIGCHLD, which
 * the kernel reaps without adding its time to anyone's rusage. Where the sandbox has a cgroup
 * that accounts CPU time (v2 `cpu.stat`, v1 `cpuacct`), that count, which misses neither, is
 * taken when it is the larger. Milliseconds, to the microsecond.
 */
export interface SandboxCpuTime {
  /** Time in user mode. */
  userMs: number;
  /** Time in the kernel on the sandbox's behalf. */
  systemMs: number;
  /**
   * How it was measured: `cgroup` (the sandbox's cgroup: every process that ran in it), `rusage`
   * (the init's, as above), or `wall-clock` where the backend cannot measure CPU time (macOS:
   * `sandbox-exec`, apple/container), which reports the command's elapsed time as user time
   * instead — an upper bound for one CPU, never less.
   */
  measuredBy: "cgroup" | "rusage" | "wall-clock";
}

/**
 * A sandbox's CPU time: its cgroup's count when it has one that accounts CPU time and that count
 * is the larger — it also holds processes reaped without accounting, which rusage cannot —
 * else the init's rusage. (The cgroup can hold a little less: the init joins it just before it
 * builds the sandbox, after its own first steps.)
 */
export function sandboxCpuTime(
  rusage: { userMs: number; systemMs: number },
  cgroup: { userMs: number; systemMs: number } | null,
): SandboxCpuTime {
  const total = (t: { userMs: number; systemMs: number }) => t.userMs + t.systemMs;
  return cgroup && total(cgroup) > total(rusage)
    ? { userMs: cgroup.userMs, systemMs: cgroup.systemMs, measuredBy: "cgroup" }
    : { userMs: rusage.userMs, systemMs: rusage.systemMs, measuredBy: "rusage" };
}

/** A reaped child: its raw wait status and the CPU time its whole process tree used. */
export interface Reaped {
  /** The raw wait status. */
  status: number;
  /** User and system CPU time in milliseconds (rusage, reaped descendants included). */
  cpu: { userMs: number; systemMs: number };
}

const waiting = new Map<number, (reaped: Reaped) => void>();
let lib: Trampoline | undefined;
let listening = false;
// Signal listeners do not keep Deno's event loop alive, and the pipes may close before the
// init can be reaped (it exits only after the kernel has killed its namespace); this timer
// keeps the loop alive meanwhile and doubles as a fallback poll.
let keepAlive: ReturnType<typeof setInterval> | undefined;
const FALLBACK_POLL_MS = 50;
const statusBuffer = new Int32Array(1);
const cpuBuffer = new BigInt64Array(2);

function poll(): void {
  for (const [pid, resolve] of waiting) {
    cpuBuffer.fill(0n);
    const r = lib!.coop_wait(pid, statusBuffer, cpuBuffer);
    if (r === pid || r < 0) {
      waiting.delete(pid);
      // r < 0 (ECHILD) cannot happen for a pid we own; report it as a SIGKILL death.
      resolve({
        status: r === pid ? statusBuffer[0] : 9,
        cpu: { userMs: Number(cpuBuffer[0]) / 1000, systemMs: Number(cpuBuffer[1]) / 1000 },
      });
    }
  }
  if (waiting.size === 0 && keepAlive !== undefined) {
    clearInterval(keepAlive);
    keepAlive = undefined;
  }
}

/** Resolves with the raw wait status and CPU time once `pid` (a child we cloned) has exited. */
export function waitForExit(trampoline: Trampoline, pid: number): Promise<Reaped> {
  lib = trampoline;
  const done = new Promise<Reaped>((resolve) => waiting.set(pid, resolve));
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
