/**
 * Removing a person's layers (`coop sandbox reset`, `clean`, a session's end) without pulling an
 * upper out from under a sandbox that has it mounted: each upper's lock (src/sandbox/upper_lock.ts)
 * is taken first — if one is held, nothing is removed and the error names the holder — and held
 * while its directories go. The lock files themselves stay: a sandbox that was waiting for one then
 * locks the same file, finds its upper gone and starts from an empty one, as a reset means.
 * @module
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { loadTrampoline } from "../sandbox/ffi.ts";
import {
  holderOf,
  SandboxUpperInUseError,
  tryLockUpper,
  type UpperLock,
  upperLockPath,
} from "../sandbox/upper_lock.ts";
import { removeTree, type TreeSize } from "./sandbox_tree.ts";

/** Takes the lock of an upper if it is free (null while a sandbox has it mounted). */
export type UpperLocker = (upper: string) => UpperLock | null;

/** The locker of this machine's sandbox library. */
export async function upperLocker(): Promise<UpperLocker> {
  const lib = await loadTrampoline();
  return (upper) => tryLockUpper(lib, upper);
}

const UPPER = "upper";
const SESSIONS = "sessions";

function names(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

/** The uppers a layer directory holds: its own (`upper`) and each session's (`sessions/<n>/upper`). */
function uppersIn(layerDir: string): string[] {
  if (!existsSync(layerDir)) return [];
  return [
    join(layerDir, UPPER),
    ...names(join(layerDir, SESSIONS)).map((name) => join(layerDir, SESSIONS, name, UPPER)),
  ];
}

/** Runs `remove` holding the lock of every upper in `uppers`; throws, removing nothing, if one is held. */
function whileLocked<T>(uppers: readonly string[], lock: UpperLocker, remove: () => T): T {
  const held: UpperLock[] = [];
  try {
    for (const upper of uppers) {
      const taken = lock(upper);
      if (!taken) throw new SandboxUpperInUseError(upper, holderOf(upper), 0);
      held.push(taken);
    }
    return remove();
  } finally {
    for (const taken of held) taken.release();
  }
}

function add(total: TreeSize, part: TreeSize): TreeSize {
  return {
    bytes: total.bytes + part.bytes,
    entries: total.entries + part.entries,
    partial: total.partial || part.partial,
  };
}

/** Everything in `dir` but the lock files of its uppers (and of its sessions' uppers). */
function removeKeepingLocks(dir: string): TreeSize {
  let size: TreeSize = { bytes: 0, entries: 0, partial: false };
  for (const name of names(dir)) {
    const path = join(dir, name);
    if (path === upperLockPath(join(dir, UPPER))) continue;
    if (name === SESSIONS) {
      for (const session of names(path)) size = add(size, removeKeepingLocks(join(path, session)));
    } else size = add(size, removeTree(path));
  }
  return size;
}

/**
 * Removes a layer directory (`uppers/<user>`, or one session's directory) while holding the lock of
 * each upper in it; what it freed. `keepLockFiles` keeps the lock files (and so the directories
 * holding them): a person's own layers, which another process may be waiting to mount. A session's
 * layers go whole: its session has ended, and only the gateway that ended it mounted them.
 */
export function removeLayerDir(
  layerDir: string,
  lock: UpperLocker,
  keepLockFiles: boolean,
): TreeSize {
  return whileLocked(
    uppersIn(layerDir),
    lock,
    () => keepLockFiles ? removeKeepingLocks(layerDir) : removeTree(layerDir),
  );
}

/**
 * Removes a whole environment directory that no config references any longer, once no upper in
 * it is mounted (its lock files go too: nothing is meant to use it again).
 */
export function removeEnvironmentDir(root: string, lock: UpperLocker): TreeSize {
  const uppers = names(join(root, "uppers")).flatMap((user) =>
    uppersIn(join(root, "uppers", user))
  );
  // The base's lock too: `coop init` holds it while it builds (base_builder.ts).
  return whileLocked([join(root, "base"), ...uppers], lock, () => removeTree(root));
}
