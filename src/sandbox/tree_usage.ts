/**
 * A workspace's usage for the accounting disk quota (disk_quota.ts), measured where it is
 * cheapest: a small workspace on the event loop by one bounded walk in C (`coop_tree_usage`
 * in ffi/dir_list.c, a few microseconds), a larger one on a worker thread
 * (`measureWorkspaceOffLoop`), whose round trip alone costs ~0.3 ms. The C walk stops after
 * `ON_LOOP_ENTRIES` entries, so a workspace a sandbox made huge costs the event loop at most
 * that before the worker takes over (ATTACKS R12). Both count the same way
 * (workspace_usage.ts): every entry, no symlink followed, each inode once, allocated blocks.
 * @module
 */
import { cString, loadTrampoline, type Trampoline } from "./ffi.ts";
import { warmOffLoop } from "./off_loop.ts";
import { measureWorkspaceOffLoop, type WorkspaceUsage } from "./workspace_usage.ts";

/** Most entries measured on the event loop (about as long as one worker round trip). */
export const ON_LOOP_ENTRIES = 256;

/**
 * `workspace`'s usage by the bounded C walk, or null when it has more than `ON_LOOP_ENTRIES`
 * entries (below `maxEntries`) or cannot be measured there; the caller then asks a worker.
 */
export function measureWorkspaceOnLoop(
  lib: Trampoline,
  workspace: string,
  maxEntries: number,
): WorkspaceUsage | null {
  const limit = Math.min(maxEntries, ON_LOOP_ENTRIES);
  const out = new BigInt64Array(2);
  const result = Number(lib.coop_tree_usage(cString(workspace), BigInt(limit), out));
  // Stopped at maxEntries itself: that is the answer (at least this much, incomplete).
  const stoppedAtMax = result === 1 && limit === maxEntries;
  if (result !== 0 && !stoppedAtMax) return null;
  return { bytes: Number(out[0]), inodes: Number(out[1]), complete: result === 0 };
}

/** `workspace`'s usage, on the event loop when it is small, else on a worker thread. */
export async function measureWorkspaceBounded(
  workspace: string,
  maxEntries: number,
): Promise<WorkspaceUsage> {
  const quick = measureWorkspaceOnLoop(await loadTrampoline(), workspace, maxEntries);
  return quick ?? await measureWorkspaceOffLoop(workspace, maxEntries);
}

let warm: Promise<void> | undefined;

/**
 * Starts the scan workers and loads the walk in them, once per process (later calls return the
 * same settled promise). The accounting quota awaits it before the command starts, so that the
 * watchdog's first measurement of a workspace that outgrew the event loop's bound does not
 * wait for a worker to start (~50 ms, far more on a loaded host) while the command writes.
 */
export function warmWorkspaceUsage(): Promise<void> {
  warm ??= warmOffLoop(new URL("./workspace_usage.ts", import.meta.url), "usageWorkerReady")
    .catch((error) => {
      warm = undefined; // the next command tries again; the watchdog's own call reports it
      throw error;
    });
  return warm;
}
