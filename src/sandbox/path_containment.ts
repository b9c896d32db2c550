/**
 * Path containment: whether a path is a directory or lies below it. The one implementation of
 * Coop; every "is this inside the workspace / the cgroup mount / the state directory" asks it.
 * @module
 */
import { isAbsolute, relative } from "node:path";

/**
 * True when `path` is `dir` itself or lies below it. Both are resolved first (against the
 * current directory when relative; `.`, `..`, repeated and trailing slashes are normalised), then
 * compared component by component, so `/a/..cache` is inside `/a` and `/ab` is not. The check is
 * lexical: symlinks are not followed — resolve them (`realpath`) first where they matter.
 *
 * @example
 * ```ts
 * isInside("/srv/ws/bob/notes", "/srv/ws/bob"); // true
 * isInside("/srv/ws/bobby", "/srv/ws/bob"); // false
 * isInside("/srv/ws/bob/../alice", "/srv/ws/bob"); // false
 * ```
 */
export function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (rel !== ".." && !rel.startsWith("../") && !isAbsolute(rel));
}
