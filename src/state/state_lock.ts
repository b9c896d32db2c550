/**
 * One gateway per state directory: `coop start` holds an exclusive lock on
 * `<state_dir>/gateway.lock` while it runs, so a second one (same config, or another config
 * naming the same directory) refuses to start instead of firing every cron job twice and
 * interleaving histories. The lock is `flock`-style (`Deno.FsFile.tryLockSync`): the kernel
 * drops it when the process ends, however it ends; the file only says whose it was.
 * @module
 */
import { join } from "node:path";
import { CoopError } from "../errors/coop_error.ts";
import { ensurePrivateDir } from "./state_db.ts";

/** The lock file `coop start` holds, inside the state directory. */
export const GATEWAY_LOCK_FILE = "gateway.lock";

/** Another process holds the state directory. */
export class StateLockedError extends CoopError {
  /** The holder's pid as it wrote it, when readable. */
  readonly pid: number | undefined;
  constructor(message: string, pid: number | undefined) {
    super("state.locked", message);
    this.name = "StateLockedError";
    this.pid = pid;
  }
}

/** A held lock; `release()` is idempotent (ending the process releases it too). */
export interface StateLock {
  /** The lock file. */
  path: string;
  release(): void;
}

/**
 * Takes the gateway lock of `stateDir` (creating the directory 0700 if needed), or throws
 * `StateLockedError` naming the pid that holds it.
 *
 * @example
 * ```ts
 * const lock = lockStateDir("/home/me/.coop");
 * try {
 *   // serve
 * } finally {
 *   lock.release();
 * }
 * ```
 */
export function lockStateDir(stateDir: string): StateLock {
  ensurePrivateDir(stateDir);
  const path = join(stateDir, GATEWAY_LOCK_FILE);
  const file = Deno.openSync(path, { read: true, write: true, create: true, mode: 0o600 });
  if (!file.tryLockSync(true)) {
    const text = readAll(file).trim();
    file.close();
    const pid = /^\d+$/.test(text) ? Number(text) : undefined;
    throw new StateLockedError(
      `another coop start ${pid ? `(pid ${pid}) ` : ""}is running on the state directory ` +
        `${stateDir}; stop it first${pid ? ` (kill ${pid})` : ""}, or give this config its own ` +
        "[agent] state_dir",
      pid,
    );
  }
  file.truncateSync(0);
  file.writeSync(new TextEncoder().encode(`${Deno.pid}\n`));
  let held = true;
  return {
    path,
    release() {
      if (!held) return;
      held = false;
      file.close(); // closing the last descriptor releases the lock
    },
  };
}

function readAll(file: Deno.FsFile): string {
  const buffer = new Uint8Array(64);
  file.seekSync(0, Deno.SeekMode.Start);
  const n = file.readSync(buffer) ?? 0;
  return new TextDecoder().decode(buffer.subarray(0, n));
}
