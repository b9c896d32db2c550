/**
 * One sandbox at a time on an environment's upper layer, across processes. Overlayfs gives
 * undefined results when one upper directory is in two mounts at once, and with `index=off` (which
 * unprivileged overlays need) the kernel only warns. A gateway serializes its own sandboxes per
 * upper (`SerialQueue`), but `coop run`, `coop shell` and `coop sandbox reset` are other
 * processes: the lock is a `flock` on `<upper>.lock` beside the upper (never inside it, so no
 * sandbox reaches it), taken before the overlay is mounted and released once the sandbox's init has
 * been reaped. A holder that dies releases it with its descriptors.
 * @module
 */
import { readFileSync } from "node:fs";
import process from "node:process";
import { abortableSleep } from "./abortable_wait.ts";
import { ERRNO } from "./errno.ts";
import { SandboxError, SandboxSetupError } from "./errors.ts";
import { cString, type Trampoline } from "./ffi.ts";

/** How long a sandbox waits for another process's sandbox on the same upper by default. */
export const DEFAULT_UPPER_WAIT_MS = 10_000;

const POLL_MS = [1, 2, 5, 10, 20, 50];

/** What a holder writes into the lock file: its pid, fixed width to overwrite the last one in place. */
const HOLDER = new TextEncoder().encode(`${String(process.pid).padStart(10)}\n`);

/** A held upper lock; `release()` once the mount is gone (idempotent). */
export interface UpperLock {
  release(): void;
}

/**
 * Who took each upper's lock last in this process: a sandbox (`lockUpper`), or anything else
 * (`tryLockUpper`: removing a layer). An overlay this process holds for the upper is valid only
 * while nothing but its own sandboxes had the lock since (held_overlay.ts).
 */
const lastTakenBy = new Map<string, "sandbox" | "other">();
const LAST_TAKEN_MAX = 256;

function takeLock(lib: Trampoline, upper: string, by: "sandbox" | "other") {
  const changed = new Int32Array(1);
  const fd = lib.coop_lock_file(
    cString(upperLockPath(upper)),
    HOLDER,
    BigInt(HOLDER.length),
    changed,
  );
  if (fd === -ERRNO.EWOULDBLOCK) return null;
  if (fd < 0) throw new SandboxSetupError("lock-upper", -fd, `the lock file of ${upper}`);
  // Another process wrote its pid since, or this one took it for something else.
  const changedHands = changed[0] !== 0 || lastTakenBy.get(upper) !== "sandbox";
  lastTakenBy.delete(upper);
  if (lastTakenBy.size >= LAST_TAKEN_MAX) lastTakenBy.delete(lastTakenBy.keys().next().value!);
  lastTakenBy.set(upper, by);
  let held = true;
  const lock: UpperLock = {
    release() {
      if (held) lib.coop_close(fd);
      held = false;
    },
  };
  return { lock, changedHands };
}

/** Another sandbox holds the upper layer (in this process or another one); nothing ran. */
export class SandboxUpperInUseError extends SandboxError {
  /** The process that holds it, when it said. */
  readonly holderPid: number | null;
  /** `message` names the upper, the holder and what to do. */
  constructor(upper: string, holderPid: number | null, waitedMs: number) {
    const holder = holderPid === null
      ? "another sandbox"
      : holderPid === process.pid
      ? "another sandbox of this process"
      : `a sandbox of process ${holderPid}`;
    super(
      "sandbox.upper_in_use",
      `the environment layer ${upper} is in use by ${holder}` +
        (waitedMs > 0 ? ` (waited ${Math.round(waitedMs / 1000)} s)` : "") +
        "; one sandbox at a time may mount it — wait for that one to end, or end it " +
        "(`coop sandbox ps`, `coop sandbox stop ID`)",
    );
    this.name = "SandboxUpperInUseError";
    this.holderPid = holderPid;
  }
}

/** The lock file of the upper layer at `upper`. */
export function upperLockPath(upper: string): string {
  return `${upper}.lock`;
}

/** Takes the lock of `upper` if it is free: the lock, or null while another holds it. */
export function tryLockUpper(lib: Trampoline, upper: string): UpperLock | null {
  return takeLock(lib, upper, "other")?.lock ?? null;
}

/**
 * Waits up to `waitMs` for the lock of `upper` for a sandbox (polling: a blocking `flock` would
 * hold a thread), then throws `SandboxUpperInUseError` naming the holder. `signal` aborted ends
 * the wait at once, rejecting with its reason, the lock not taken. `waited` says whether another
 * holder had it first; `changedHands` whether anything but this process's sandboxes took it
 * since the last of them (another process, a layer removal).
 */
export async function lockUpper(
  lib: Trampoline,
  upper: string,
  options: { waitMs?: number; signal?: AbortSignal } = {},
): Promise<{ lock: UpperLock; waited: boolean; changedHands: boolean }> {
  const waitMs = options.waitMs ?? DEFAULT_UPPER_WAIT_MS;
  const start = performance.now();
  // Cancelled already: not even a free lock is taken (the caller would have it to release).
  options.signal?.throwIfAborted();
  for (let attempt = 0;; attempt++) {
    const taken = takeLock(lib, upper, "sandbox");
    if (taken) return { ...taken, waited: attempt > 0 };
    const waited = performance.now() - start;
    if (waited >= waitMs) throw new SandboxUpperInUseError(upper, holderOf(upper), waited);
    const pause = Math.min(POLL_MS[Math.min(attempt, POLL_MS.length - 1)], waitMs - waited);
    await abortableSleep(pause, options.signal);
  }
}

/** The pid the holder wrote into the lock file, or null. */
export function holderOf(upper: string): number | null {
  try {
    const pid = Number(readFileSync(upperLockPath(upper), "utf8").trim());
    return Number.isInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}
