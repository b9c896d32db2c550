/**
 * Which workspace paths a sandbox gets read-only: entries named in `policy.protectedNames`
 * (default `.git`) at the top of the workspace or one directory below it — where the owner
 * keeps repositories the sandbox works on, and where the owner's own git would later run their
 * hooks and `core.fsmonitor` on the host (ATTACKS F5, F23).
 *
 * The lookup runs before every sandbox and grows with the workspace's top directory, which a
 * sandbox fills as it likes; so it runs on a worker thread (`protectedPathsOffLoop`, ATTACKS
 * R12) and stops past an entry limit: a workspace it cannot check is not run in (fail closed).
 * @module
 */
import { existsSync } from "node:fs";
import { SandboxUnavailableError, SandboxWorkspaceError } from "./errors.ts";
import { runOffLoop } from "./off_loop.ts";

/** Default entry limit of the lookup (`policy.scanLimit`). */
export const DEFAULT_SCAN_LIMIT = 100_000;

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

/** `protectedPathsIn` on a worker thread: the event loop stays free while it lists. */
export async function protectedPathsOffLoop(
  workspace: string,
  names: readonly string[],
  maxEntries = DEFAULT_SCAN_LIMIT,
): Promise<string[]> {
  if (names.length === 0) return [];
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
  const wanted = new Set(names);
  const found: string[] = [];
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(workspace)];
  } catch {
    return { paths: [] }; // unreadable or gone: setup reports a missing workspace itself
  }
  if (entries.length > maxEntries) return { tooLarge: entries.length };
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
  return { paths: found.sort() };
}

function isPlainEntry(path: string): boolean {
  // Most subdirectories have none of the names: `existsSync` answers that in about 1 µs, a
  // failed `lstatSync` in about 14 (it builds an exception).
  if (!existsSync(path)) return false;
  try {
    return !Deno.lstatSync(path).isSymlink;
  } catch {
    return false;
  }
}
