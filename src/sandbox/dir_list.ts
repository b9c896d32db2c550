/**
 * A directory's entries read on the event loop by one bounded `getdents64` in C
 * (`ffi/dir_list.c`): a listing that does not fit the caller's buffer is not read at all, so a
 * sandbox that made a directory huge costs the event loop one buffer, never the whole listing
 * (ATTACKS R12). Used where a worker's round trip (~0.3 ms) would cost more than a small
 * listing: the protected-paths lookup before a sandbox, the workspace scan after a call.
 * @module
 */
import { lstatSync } from "node:fs";
import { errnoName } from "./errno.ts";
import { cString, type Trampoline } from "./ffi.ts";

/** One entry, without `.` and `..`. */
export interface ListedEntry {
  name: string;
  kind: "dir" | "file" | "symlink" | "other";
}

const E2BIG = 7;
const DT_DIR = 4, DT_REG = 8, DT_LNK = 10, DT_UNKNOWN = 0;
const utf8 = new TextDecoder();

/**
 * The entries of `path` (its last component followed, like `open(2)`), or `"too-large"` when
 * their records do not fit `buffer`. Throws an error whose `code` is the errno name (`ENOENT`,
 * `EACCES` …) when the directory cannot be read.
 *
 * @example
 * ```ts
 * const entries = listDirBounded(await loadTrampoline(), "/srv/ws/bob", new Uint8Array(16384));
 * ```
 */
export function listDirBounded(
  lib: Trampoline,
  path: string,
  buffer: Uint8Array<ArrayBuffer>,
): ListedEntry[] | "too-large" {
  const used = Number(lib.coop_list_dir(cString(path), buffer, BigInt(buffer.length)));
  if (used === -E2BIG) return "too-large";
  if (used < 0) {
    const code = errnoName(-used);
    throw Object.assign(new Error(`${code}: cannot list ${path}`), { code });
  }
  const view = new DataView(buffer.buffer, 0, used);
  const entries: ListedEntry[] = [];
  // struct linux_dirent64: ino (8), off (8), reclen (2), type (1), NUL-terminated name.
  for (let at = 0; at < used; at += view.getUint16(at + 16, true)) {
    const type = view.getUint8(at + 18);
    const end = buffer.indexOf(0, at + 19);
    const name = utf8.decode(buffer.subarray(at + 19, end));
    if (name === "." || name === "..") continue;
    if (type !== DT_UNKNOWN) {
      entries.push({ name, kind: KIND_OF_TYPE.get(type) ?? "other" });
      continue;
    }
    // Some file systems do not say; ask (a name that vanished meanwhile is left out).
    try {
      const info = lstatSync(`${path}/${name}`);
      const kind = info.isSymbolicLink()
        ? "symlink"
        : info.isDirectory()
        ? "dir"
        : info.isFile()
        ? "file"
        : "other";
      entries.push({ name, kind });
    } catch {
      // gone
    }
  }
  return entries;
}

const KIND_OF_TYPE = new Map<number, ListedEntry["kind"]>([
  [DT_DIR, "dir"],
  [DT_REG, "file"],
  [DT_LNK, "symlink"],
]);
