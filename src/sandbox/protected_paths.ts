/**
 * Which workspace paths a sandbox gets read-only: entries named in `policy.protectedNames`
 * (default `.git`) at the top of the workspace or one directory below it — where the owner
 * keeps repositories the sandbox works on, and where the owner's own git would later run their
 * hooks and `core.fsmonitor` on the host (ATTACKS F5, F23).
 * @module
 */

/** How many directories below the workspace root are looked at (0 = the root only). */
const DEPTH = 1;

/**
 * Returns the protected paths that exist, relative to `workspace` (e.g. `.git`,
 * `project/.git`). Symlinks are neither followed nor protected: one inside the workspace was
 * made by a sandbox, and the C side refuses to mount over a symlink anyway.
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
  const walk = (relative: string, depth: number) => {
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(relative ? `${workspace}/${relative}` : workspace)];
    } catch {
      return; // unreadable or gone: setup reports a missing workspace itself
    }
    for (const entry of entries) {
      const path = relative ? `${relative}/${entry.name}` : entry.name;
      if (entry.isSymlink) continue;
      if (wanted.has(entry.name)) found.push(path);
      else if (entry.isDirectory && depth < DEPTH) walk(path, depth + 1);
    }
  };
  walk("", 0);
  return found.sort();
}
