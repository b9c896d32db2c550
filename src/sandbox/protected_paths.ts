/**
 * Which workspace paths a sandbox gets read-only: entries named in `policy.protectedNames`
 * (default `.git`) at the top of the workspace or one directory below it — where the owner
 * keeps repositories the sandbox works on, and where the owner's own git would later run their
 * hooks and `core.fsmonitor` on the host (ATTACKS F5, F23).
 * @module
 */
import { existsSync } from "node:fs";

/**
 * Returns the protected paths that exist, relative to `workspace` (e.g. `.git`,
 * `project/.git`). Symlinks are neither followed nor protected: one inside the workspace was
 * made by a sandbox, and the C side refuses to mount over a symlink anyway. Runs before every
 * sandbox, so it lists the top level once and only looks up the names one level down (no
 * listing of big subdirectories such as `node_modules`).
 *
 * @example
 * ```ts
 * protectedPathsIn("/srv/ws/bob", [".git"]); // [".git", "site/.git"]
 * ```
 */
export function protectedPathsIn(workspace: string, names: readonly string[]): string[] {
  if (names.length === 0) return [];
  const wanted = new Set(names);
  const found: string[] = [];
  // Sync on purpose: async file calls grow Deno's blocking pool (see canonicalWorkspace).
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync(workspace)];
  } catch {
    return []; // unreadable or gone: setup reports a missing workspace itself
  }
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
  return found.sort();
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
