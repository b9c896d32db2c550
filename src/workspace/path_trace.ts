/**
 * Where a path git would follow really leads, and through which symlinks. A repository can
 * point elsewhere by a `.git` file, `commondir`, `objects/info/alternates`, an include or a
 * symlink; a pointer the owner made is fine, but a symlink a sandbox swapped in under it later
 * would redirect it without the pointer itself changing. So the walk records every symlink it
 * passes, for the caller to ask when each was made.
 * @module
 */
import fs from "node:fs";
import { isAbsolute, join, normalize } from "node:path";

/** A symlink passed on the way, with its ctime. */
export interface TracedLink {
  path: string;
  ctimeMs: number;
}

/** Where a path leads. */
export interface PathTrace {
  /** The resolved path; below the first missing component, kept as written (normalised). */
  real: string;
  /** False when some component does not exist (the rest could be made later). */
  exists: boolean;
  /** Every symlink resolved on the way, in order. */
  links: TracedLink[];
  /** True when resolution gave up (a loop, or too many links): treat as unknown. */
  unresolved: boolean;
}

const MAX_LINKS = 40; // Linux's own limit on symlinks in one lookup

/**
 * Resolves `path` (absolute, or relative to `base`) like the kernel would, one component at a
 * time, recording the symlinks. `~` paths are the owner's home: not traced, reported as given.
 *
 * @example
 * ```ts
 * tracePath("../shared/.git", "/ws/bob/app"); // { real: "/ws/bob/shared/.git", links: [], … }
 * ```
 */
export function tracePath(path: string, base: string): PathTrace {
  const start = isAbsolute(path) ? path : join(base, path);
  const pending = normalize(start).split("/").filter((p) => p !== "");
  const links: TracedLink[] = [];
  let current = "/";
  while (pending.length) {
    const part = pending.shift()!;
    if (part === ".") continue;
    if (part === "..") {
      current = join(current, "..");
      continue;
    }
    const next = join(current, part);
    let info: fs.Stats;
    try {
      info = fs.lstatSync(next);
    } catch {
      return { real: normalize(join(next, ...pending)), exists: false, links, unresolved: false };
    }
    if (!info.isSymbolicLink()) {
      current = next;
      continue;
    }
    links.push({ path: next, ctimeMs: info.ctimeMs });
    if (links.length > MAX_LINKS) return { real: next, exists: false, links, unresolved: true };
    let target: string;
    try {
      target = fs.readlinkSync(next);
    } catch {
      return { real: next, exists: false, links, unresolved: true };
    }
    pending.unshift(...target.split("/").filter((p) => p !== ""));
    if (target.startsWith("/")) current = "/";
  }
  return { real: current, exists: true, links, unresolved: false };
}
