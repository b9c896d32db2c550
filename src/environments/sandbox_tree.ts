/**
 * Measuring and deleting trees a sandbox wrote (upper layers, persist directories). Their
 * content is the sandbox's: symlinks anywhere, directories without permissions, and — if a
 * sandbox of that user still runs — entries swapped while we walk. So no symlink is ever
 * followed: every name is looked up in a directory held open (`DirHandle`, openat semantics),
 * sizes come from lstat, and directory modes are changed through their own descriptor only.
 * @module
 */
import fs from "node:fs";
import { basename, dirname } from "node:path";
import { DirHandle, errnoCode } from "../workspace/dir_handle.ts";

/** Deeper than this a walk stops (one open descriptor per level). */
export const MAX_TREE_DEPTH = 256;
/** Entries a size walk reads at most by default. */
export const DEFAULT_SIZE_LIMIT = 2_000_000;

/** What a size walk found. */
export interface TreeSize {
  /** Disk space in use (allocated blocks), bytes. */
  bytes: number;
  /** Entries counted (the top directory included). */
  entries: number;
  /** True when the walk stopped at its entry or depth limit: `bytes` is a lower bound. */
  partial: boolean;
}

/** Measures `path` with lstat only; a missing path is empty. Never follows a symlink. */
export function treeSize(path: string, maxEntries: number = DEFAULT_SIZE_LIMIT): TreeSize {
  const out: TreeSize = { bytes: 0, entries: 0, partial: false };
  let top: fs.Stats;
  try {
    top = fs.lstatSync(path);
  } catch (error) {
    if (errnoCode(error) === "ENOENT") return out;
    throw error;
  }
  out.bytes += top.blocks * 512;
  out.entries++;
  if (!top.isDirectory()) return out;
  let dir: DirHandle;
  try {
    dir = DirHandle.open(path);
  } catch (error) {
    // Unreadable (mode 000 in an unprivileged run) or swapped: count what we saw.
    if (["EACCES", "ELOOP", "ENOTDIR", "ENOENT"].includes(errnoCode(error) ?? "")) {
      out.partial = true;
      return out;
    }
    throw error;
  }
  try {
    walkSize(dir, 1, maxEntries, out);
  } finally {
    dir.close();
  }
  return out;
}

function walkSize(dir: DirHandle, depth: number, max: number, out: TreeSize): void {
  if (depth > MAX_TREE_DEPTH) {
    out.partial = true;
    return;
  }
  let entries;
  try {
    entries = dir.list(max - out.entries + 1);
  } catch {
    out.partial = true;
    return;
  }
  for (const entry of entries) {
    if (out.entries >= max) {
      out.partial = true;
      return;
    }
    let info: fs.Stats | null;
    try {
      info = dir.lstat(entry.name);
    } catch {
      out.partial = true;
      continue;
    }
    if (!info) continue;
    out.bytes += info.blocks * 512;
    out.entries++;
    if (!info.isDirectory()) continue;
    let child: DirHandle | null;
    try {
      child = dir.openDir(entry.name);
    } catch {
      out.partial = true;
      continue;
    }
    if (!child) continue;
    try {
      walkSize(child, depth + 1, max, out);
    } finally {
      child.close();
    }
  }
}

/** Linux's O_PATH (node:fs under Deno does not name it): a handle for fstat and /proc only. */
const O_PATH = 0o10000000;

/**
 * Gives the owner rwx on directory `name` in `dir` without following a symlink: an O_PATH
 * descriptor of the entry itself, checked to be a directory, then chmod through its
 * `/proc/self/fd` link (which names the opened directory, not a path to resolve again). This
 * works on a directory of mode 000, which cannot be opened for reading.
 */
function openUpEntry(dir: DirHandle, name: string): void {
  let fd: number;
  try {
    fd = fs.openSync(dir.at(name), O_PATH | fs.constants.O_NOFOLLOW);
  } catch {
    return; // gone, or swapped for a symlink (ELOOP): nothing of ours to change
  }
  try {
    if (fs.fstatSync(fd).isDirectory()) fs.chmodSync(`/proc/self/fd/${fd}`, 0o700);
  } finally {
    fs.closeSync(fd);
  }
}

/** Gives the owner rwx on every directory below `dir`, so that it can empty them. */
function openUp(dir: DirHandle, depth: number): void {
  if (depth > MAX_TREE_DEPTH) return;
  for (const entry of dir.list()) {
    if (entry.kind !== "dir") continue;
    openUpEntry(dir, entry.name);
    const child = dir.openDir(entry.name);
    if (!child) continue;
    try {
      openUp(child, depth + 1);
    } finally {
      child.close();
    }
  }
}

/**
 * Deletes `path` and everything below it without following symlinks, and returns the space it
 * used (measured first). A missing path frees nothing. When a directory inside has no write
 * permission (the unprivileged case: the sandbox made it so), its mode is opened up through
 * its own descriptor and the removal retried.
 */
export function removeTree(path: string): TreeSize {
  let size = treeSize(path);
  if (size.entries === 0) return size;
  // A directory the sandbox left unreadable (the kernel's own overlay work/work is mode 000)
  // hides what is below it from the size walk: it is going anyway, so open it up and measure.
  if (size.partial && size.entries < DEFAULT_SIZE_LIMIT) {
    openUpTree(path);
    size = treeSize(path);
  }
  try {
    removeAll(path);
    return size;
  } catch (error) {
    if (!(error instanceof Deno.errors.PermissionDenied)) {
      if (error instanceof Deno.errors.NotFound) return size;
      throw error;
    }
  }
  openUpTree(path);
  removeAll(path);
  return size;
}

/**
 * How many times a removal starts again when a directory gained an entry while it was being
 * emptied. A gateway (this process or another) makes empty overlay work directories ahead of
 * need, a few in one go, in the layer's `work` after a sandbox ended
 * (`src/sandbox/overlay_workdir.ts`); a layer removed at that moment — `coop sandbox reset`, a
 * session's end — finds `work` not empty when it comes to remove it. Making them needs `work`,
 * so once it is gone nothing more appears, and a pass or two more finishes the job.
 */
const GREW_RETRIES = 5;

/**
 * Deno's recursive remove is Rust's remove_dir_all: openat/unlinkat, never following a symlink
 * (CVE-2022-21658 fixed it against swaps during the walk). Starts again when a directory grew;
 * `remove` is the removal itself (tests inject one).
 */
export function removeAll(
  path: string,
  remove: (path: string) => void = (path) => Deno.removeSync(path, { recursive: true }),
): void {
  for (let attempt = 0;; attempt++) {
    try {
      return remove(path);
    } catch (error) {
      const grew = (error as { code?: string }).code === "ENOTEMPTY";
      if (!grew || attempt === GREW_RETRIES) throw error;
    }
  }
}

/** Gives the owner rwx on directory `path` and every directory below it. */
function openUpTree(path: string): void {
  const parent = DirHandle.open(dirname(path));
  try {
    openUpEntry(parent, basename(path));
    const top = parent.openDir(basename(path));
    if (!top) return;
    try {
      openUp(top, 1);
    } finally {
      top.close();
    }
  } finally {
    parent.close();
  }
}
