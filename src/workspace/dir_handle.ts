/**
 * A directory held open by file descriptor, for changing a workspace that a running sandbox can
 * change too. Every name is looked up inside the held directory (`/proc/self/fd/N/name`, which
 * is `openat(N, name)`), never through the path it was found at, and the last component is
 * never followed when it is a symlink: a directory swapped for a symlink after we looked cannot
 * lead a rename, a write or a chmod outside the workspace. Synchronous on purpose: it runs on a
 * worker thread (src/sandbox/off_loop.ts).
 * @module
 */
import fs from "node:fs";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;

/** Suffix of what Coop set aside; git never reads a file or hook of that name. */
export const DISABLED_SUFFIX = ".coop-disabled";

/** One entry of a directory listing. */
export interface DirEntry {
  name: string;
  kind: "dir" | "file" | "symlink" | "other";
}

/** An errno code of a failed file call, e.g. `ENOENT` (`undefined` for other errors). */
export function errnoCode(error: unknown): string | undefined {
  return (error as { code?: string } | null)?.code;
}

/** A directory open by fd; `path` is where it was found (for reports only). */
export class DirHandle {
  private constructor(readonly fd: number, readonly path: string) {}

  /** Opens `path` (its last component must not be a symlink). Throws the errno error. */
  static open(path: string): DirHandle {
    return new DirHandle(fs.openSync(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW), path);
  }

  /** The `/proc` path of `name` inside this directory. */
  at(name: string): string {
    return `/proc/self/fd/${this.fd}/${name}`;
  }

  /** Opens subdirectory `name` (not a symlink); null when it is none. Throws on EACCES. */
  openDir(name: string): DirHandle | null {
    try {
      return new DirHandle(
        fs.openSync(this.at(name), O_RDONLY | O_DIRECTORY | O_NOFOLLOW),
        `${this.path}/${name}`,
      );
    } catch (error) {
      if (["ENOENT", "ENOTDIR", "ELOOP"].includes(errnoCode(error) ?? "")) return null;
      throw error;
    }
  }

  /** Opens a relative path below this directory, every component a real directory. */
  openPath(relative: string): DirHandle | null {
    let dir = new DirHandle(fs.openSync(this.at("."), O_RDONLY | O_DIRECTORY), this.path);
    for (const part of relative.split("/").filter((p) => p !== "" && p !== ".")) {
      let next: DirHandle | null;
      try {
        next = part === ".." ? null : dir.openDir(part);
      } finally {
        dir.close();
      }
      if (!next) return null;
      dir = next;
    }
    return dir;
  }

  /**
   * The entries, without `.` and `..`; at most `max` of them (a scan past its entry limit needs
   * one more to know, not all 800,000: going through them all took ~10 s).
   */
  list(max = Infinity): DirEntry[] {
    const entries: DirEntry[] = [];
    if (max <= 0) return entries;
    // Deno's own listing: two to three times faster than node:fs's with file types.
    for (const d of Deno.readDirSync(this.at("."))) {
      const kind = d.isDirectory ? "dir" : d.isSymlink ? "symlink" : d.isFile ? "file" : "other";
      entries.push({ name: d.name, kind });
      if (entries.length >= max) break;
    }
    return entries;
  }

  /** lstat of `name`; null when it does not exist. */
  lstat(name: string): fs.Stats | null {
    try {
      return fs.lstatSync(this.at(name));
    } catch (error) {
      if (errnoCode(error) === "ENOENT" || errnoCode(error) === "ENOTDIR") return null;
      throw error;
    }
  }

  /** The target of symlink `name`. */
  readLink(name: string): string {
    return fs.readlinkSync(this.at(name));
  }

  /**
   * The bytes of regular file `name`, at most `maxBytes` (more: `"too-large"`); null when it
   * is missing or not a regular file. Never follows a symlink, never blocks on a fifo.
   */
  readFile(name: string, maxBytes: number): Uint8Array | "too-large" | null {
    let fd: number;
    try {
      fd = fs.openSync(this.at(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch (error) {
      if (["ENOENT", "ELOOP", "ENOTDIR", "ENXIO"].includes(errnoCode(error) ?? "")) return null;
      throw error;
    }
    try {
      const info = fs.fstatSync(fd);
      if (!info.isFile()) return null;
      if (info.size > maxBytes) return "too-large";
      const bytes = new Uint8Array(info.size);
      let read = 0;
      while (read < bytes.length) {
        const n = fs.readSync(fd, bytes, read, bytes.length - read, read);
        if (n === 0) break;
        read += n;
      }
      return bytes.subarray(0, read);
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * Renames `name` to `name.coop-disabled` (or `…-2`, `…-3` when taken) in this directory and
   * returns the new name. rename(2) moves the entry itself, never what a symlink points at.
   */
  setAside(name: string): string {
    let aside = `${name}${DISABLED_SUFFIX}`;
    for (let n = 2; this.lstat(aside); n++) aside = `${name}${DISABLED_SUFFIX}-${n}`;
    fs.renameSync(this.at(name), this.at(aside));
    return aside;
  }

  /** Creates regular file `name`, which must not exist (no symlink is followed), with `bytes`. */
  createFile(name: string, bytes: Uint8Array, mode = 0o644): void {
    const fd = fs.openSync(this.at(name), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    try {
      let written = 0;
      while (written < bytes.length) written += fs.writeSync(fd, bytes, written);
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * Clears the execute bits of regular file `name` through its fd (never a symlink's target),
   * unless it has other names.
   */
  clearExecutable(name: string): void {
    let fd: number;
    try {
      fd = fs.openSync(this.at(name), O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    } catch {
      return; // gone or swapped for a symlink since: nothing of ours to change
    }
    try {
      const info = fs.fstatSync(fd);
      // A hard link shares its mode with the other name, which may be someone else's file.
      if (info.isFile() && info.nlink === 1) fs.fchmodSync(fd, info.mode & 0o666);
    } finally {
      fs.closeSync(fd);
    }
  }

  /** Closes the descriptor. */
  close(): void {
    fs.closeSync(this.fd);
  }
}
