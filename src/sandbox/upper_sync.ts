/**
 * Writes an environment's upper layer to disk after its sandbox ends, off `exec()`'s path.
 *
 * The overlay is mounted "volatile" (ffi/init/rootfs.c): without it, the unmount when the
 * sandbox's last process exits syncs the upper's whole file system, and `exec()` waited for
 * that. Volatile also turns an `fsync` inside the sandbox into a no-op, so `dpkg`'s own syncs no
 * longer reach the disk either: this `syncfs` of the upper's file system, on a thread of the
 * runtime's pool once the sandbox has ended, is what does. Until it has run, the layer is as
 * durable as any file written without `fsync` (the kernel writes it back within about 30 s): a
 * host crash in that window can lose a command's last changes to its user's environment, never
 * anything else.
 * Requests for one file system (every user's upper usually shares one) share a sync: while one
 * runs, the next waits for it and then runs once for everything that asked meanwhile.
 * @module
 */
import { statSync } from "node:fs";
import { getLogger } from "@logtape/logtape";
import { cString, loadTrampoline } from "./ffi.ts";
import { errnoName } from "./errno.ts";
import { workdirRemovalsSettled } from "./overlay_workdir.ts";
import { dropHeldOverlays } from "./held_overlay.ts";

interface Pending {
  running: Promise<void>;
  again: Promise<void> | null;
}

/** The sync running for each file system (by device number), and the one queued after it. */
const pending = new Map<string, Pending>();
const log = getLogger(["coop", "sandbox"]);

/**
 * `syncfs` of the file system holding `upper`, on a thread of the runtime's pool (a
 * nonblocking FFI call: a message to the off-loop worker cost ≈ 0.15 ms of CPU more per
 * sandbox). Rejects on failure, naming the errno.
 */
export async function syncFileSystemOf(upper: string): Promise<void> {
  const lib = await loadTrampoline();
  const path = cString(upper);
  // The closure holds the path until the call is done: C reads it on another thread meanwhile.
  const result = await lib.coop_syncfs(path).finally(() => path.byteLength);
  if (result !== 0) {
    const code = errnoName(-result);
    throw Object.assign(new Error(`syncfs of ${upper}: ${code}`), { code });
  }
}

/**
 * Syncs `upper`'s file system soon, on a worker thread; resolves once a sync that began after
 * this call has finished. Rejects with the sync's error (callers log it: the sandbox's own
 * result does not depend on it).
 */
export function syncUpper(upper: string): Promise<void> {
  let device: string;
  try {
    device = String(statSync(upper).dev);
  } catch (error) {
    return Promise.reject(error);
  }
  const start = (): Promise<void> => {
    const entry: Pending = { running: syncFileSystemOf(upper), again: null };
    pending.set(device, entry);
    const settle = () => {
      if (pending.get(device) === entry && entry.again === null) pending.delete(device);
    };
    entry.running.then(settle, settle);
    return entry.running;
  };
  const current = pending.get(device);
  if (!current) return start();
  // One is running: it may have begun before this sandbox's last write. Follow it with one more.
  current.again ??= current.running.catch(() => {}).then(start);
  return current.again;
}

/** Resolves once every sync asked for so far has finished (tests, the gateway's shutdown). */
export async function upperSyncsSettled(): Promise<void> {
  while (pending.size > 0) {
    await Promise.allSettled(
      [...pending.values()].flatMap((p) => [p.running, p.again ?? p.running]),
    );
  }
}

/**
 * `syncUpper` for a sandbox that just ended (or finished a command), without waiting: a failure
 * is logged as `sandbox.upper_sync` — the command's result stands, its writes are in the page
 * cache, and the next sync retries.
 */
export function syncUpperInBackground(upper: string | null): void {
  if (upper === null) return;
  syncUpper(upper).catch((error) =>
    log.warn("sandbox.upper_sync failed for {upper}: {error}", {
      upper,
      error: (error as Error).message,
    })
  );
}

/**
 * Resolves once what sandboxes with an environment root leave to do after their result is done:
 * their overlays no longer held for the next sandbox, their work directories removed, their
 * uppers synced to disk. Await it before a process that ran such sandboxes exits.
 *
 * @example
 * ```ts
 * import { environmentWritesSettled, exec } from "./mod.ts";
 * const root = { lower: "host", upper: "/srv/coop/bob/upper", work: "/srv/coop/bob/work" } as const;
 * await exec({ workspace: "/srv/coop/bob/work", rootfs: root }, ["pip", "install", "rich"]);
 * await environmentWritesSettled();
 * ```
 */
export async function environmentWritesSettled(): Promise<void> {
  dropHeldOverlays();
  await workdirRemovalsSettled();
  await upperSyncsSettled();
}
