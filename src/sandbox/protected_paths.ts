/**
 * Which workspace paths a sandbox gets read-only: entries named in `policy.protectedNames`
 * (default `.git`) at the top of the workspace or one directory below it — where the owner
 * keeps repositories the sandbox works on, and where the owner's own git would later run their
 * hooks and `core.fsmonitor` on the host (ATTACKS F5, F23).
 *
 * The lookup runs before every sandbox and grows with the workspace's top directory, which a
 * sandbox fills as it likes. A top whose listing fits one `ON_LOOP_BYTES` buffer is looked up
 * right here (a bounded read in C, `ffi/dir_list.c`: tens of microseconds); a larger one on a
 * worker thread (`protectedPathsOffLoop`, ATTACKS R12), which stops past an entry limit: a
 * workspace it cannot check is not run in (fail closed). A worker's round trip (~0.3 ms) costs
 * more than a whole small lookup, hence the split.
 * @module
 */
import { type Dir, existsSync, lstatSync, opendirSync } from "node:fs";
import { SandboxUnavailableError, SandboxWorkspaceError } from "./errors.ts";
import { listDirBounded } from "./dir_list.ts";
import { loadTrampoline } from "./ffi.ts";
import { runOffLoop } from "./off_loop.ts";

/** Default entry limit of the lookup (`policy.scanLimit`). */
export const DEFAULT_SCAN_LIMIT = 100_000;

/**
 * Bytes of directory records (`getdents64`) read on the event loop at most: ~680 short names or
 * ~58 of the longest. A top that does not fit is looked up on a worker.
 */
const ON_LOOP_BYTES = 16 * 1024;

/** What the lookup found, or that it read more entries than allowed. */
export type ProtectedPathsResult = { paths: string[] } | { tooLarge: number };

/**
 * Returns the protected paths that exist, relative to `workspace` (e.g. `.git`,
 * `project/.git`). Symlinks are neither followed nor protected: one inside the workspace was
 * made by a sandbox, and the C side refuses to mount over a symlink anyway. It lists the top
 * level once and only looks up the names one level down (no listing of big subdirectories such
 * as `node_modules`). Throws `SandboxWorkspaceError` past `maxEntries` entries.
 *
 * @example
 * ```ts
 * protectedPathsIn("/srv/ws/bob", [".git"]); // [".git", "site/.git"]
 * ```
 */
export function protectedPathsIn(
  workspace: string,
  names: readonly string[],
  maxEntries = DEFAULT_SCAN_LIMIT,
): string[] {
  const result = protectedPathsTask(workspace, names, maxEntries);
  if ("tooLarge" in result) throw workspaceTooLarge(workspace, maxEntries);
  return result.paths;
}

/**
 * `protectedPathsIn` without stalling the event loop: a small top is looked up here, a large
 * one on a worker thread.
 */
export async function protectedPathsOffLoop(
  workspace: string,
  names: readonly string[],
  maxEntries = DEFAULT_SCAN_LIMIT,
): Promise<string[]> {
  if (names.length === 0) return [];
  const small = await smallTop(workspace);
  if (small && small.length > maxEntries) throw workspaceTooLarge(workspace, maxEntries);
  if (small) return lookUp(workspace, names, small).sort();
  let result: ProtectedPathsResult;
  try {
    result = await runOffLoop<ProtectedPathsResult>(
      new URL(import.meta.url),
      "protectedPathsTask",
      [workspace, names, maxEntries],
    );
  } catch (error) {
    throw new SandboxUnavailableError(
      `cannot check which paths of ${workspace} must stay read-only, so nothing was run: ` +
        (error as Error).message,
      { cause: error },
    );
  }
  if ("tooLarge" in result) throw workspaceTooLarge(workspace, maxEntries);
  return result.paths;
}

function workspaceTooLarge(workspace: string, maxEntries: number): SandboxWorkspaceError {
  return new SandboxWorkspaceError(
    `the workspace ${workspace} has more than ${maxEntries} entries at its top, too many to ` +
      "verify which of them must stay read-only, so nothing was run; move files into " +
      "subdirectories or delete some, or raise sandbox.workspace_scan_limit",
  );
}

/** The lookup itself, returning instead of throwing (a worker passes plain data back). */
export function protectedPathsTask(
  workspace: string,
  names: readonly string[],
  maxEntries: number,
): ProtectedPathsResult {
  if (names.length === 0) return { paths: [] };
  const entries: TopEntry[] = [];
  let dir: Dir | undefined;
  try {
    dir = opendirSync(workspace);
    // One past the limit says enough: going through all of 800,000 took ~10 s on the worker.
    for (let entry = dir.readSync(); entry !== null; entry = dir.readSync()) {
      entries.push({
        name: entry.name,
        isSymlink: entry.isSymbolicLink(),
        isDirectory: entry.isDirectory(),
      });
      if (entries.length > maxEntries) return { tooLarge: entries.length };
    }
  } catch {
    return { paths: [] }; // unreadable or gone: setup reports a missing workspace itself
  } finally {
    dir?.closeSync();
  }
  return { paths: lookUp(workspace, names, entries).sort() };
}

/** One entry of the workspace's top, as either listing reports it. */
interface TopEntry {
  name: string;
  isSymlink: boolean;
  isDirectory: boolean;
}

/** The protected names among `entries` and one level below the directories among them. */
function lookUp(workspace: string, names: readonly string[], entries: TopEntry[]): string[] {
  const wanted = new Set(names);
  const found: string[] = [];
  for (const entry of entries) {
    if (entry.isSymlink) continue;
    if (wanted.has(entry.name)) found.push(entry.name);
    else if (entry.isDirectory) {
      for (const name of names) {
        const path = `${entry.name}/${name}`;
        if (isPlainEntry(`${workspace}/${path}`)) found.push(path);
      }
    }
  }
  return found;
}

/**
 * The workspace's top when its listing fits `ON_LOOP_BYTES`, else null. Unreadable or gone:
 * no entries, as on the worker (setup reports a missing workspace itself).
 */
async function smallTop(workspace: string): Promise<TopEntry[] | null> {
  const lib = await loadTrampoline();
  let listed;
  try {
    listed = listDirBounded(lib, workspace, new Uint8Array(ON_LOOP_BYTES));
  } catch {
    return [];
  }
  if (listed === "too-large") return null;
  return listed.map(({ name, kind }) => ({
    name,
    isSymlink: kind === "symlink",
    isDirectory: kind === "dir",
  }));
}

function isPlainEntry(path: string): boolean {
  // Most subdirectories have none of the names: `existsSync` answers that in about 1 µs, a
  // failed `lstatSync` in about 14 (it builds an exception).
  if (!existsSync(path)) return false;
  try {
    return !lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}
