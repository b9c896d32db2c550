/**
 * Applies one tar layer to a root directory the way an OCI runtime does (whiteouts `.wh.<name>`
 * and opaque directories `.wh..wh..opq` remove what lower layers put there) — and refuses any
 * entry that could reach outside the root: absolute names, `..`, a symlink anywhere in the
 * path of an entry, a hard link whose target is outside or is not a regular file. A refused
 * entry fails the whole layer (`LayerEscapeError`); nothing is written through a symlink.
 *
 * Not created, by design: device nodes and FIFOs (the sandbox brings its own `/dev`), set-uid
 * and set-gid bits (a base must not hand privileges to whoever runs in it), owners other than
 * the one the unpacker runs as or is told to use (a sandbox maps a single id), extended
 * attributes (file capabilities among them).
 * @module
 */
import {
  chmodSync,
  closeSync,
  constants,
  lchownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeSync,
} from "node:fs";
import { join } from "node:path";
import { CoopError } from "../errors/coop_error.ts";
import type { TarEntry, TarSink } from "./tar_reader.ts";

/** An entry of the archive would land outside the root or through a link; the layer is refused. */
export class LayerEscapeError extends CoopError {
  /** `message` names the entry and why it was refused. */
  constructor(message: string) {
    super("environment.layer_escape", message);
    this.name = "LayerEscapeError";
  }
}

/** What an unpack skipped on purpose, reported to the user. */
export interface UnpackSkipped {
  devices: number;
  fifos: number;
  setIdBits: number;
}

/** Options of one unpack. */
export interface UnpackOptions {
  /** lchown every entry to this host uid/gid (root invokers: the sandbox's host id). */
  owner?: { uid: number; gid: number };
  /** Called with the number of file-data bytes just written (for progress). */
  onBytes?: (bytes: number) => void;
}

const WHITEOUT = ".wh.";
const OPAQUE = ".wh..wh..opq";

/** The archive name as path components below the root, or a refusal. */
export function safeComponents(name: string, what = "entry"): string[] {
  if (name.startsWith("/")) {
    throw new LayerEscapeError(`${what} "${name}" is an absolute path`);
  }
  const parts = name.split("/").filter((p) => p !== "" && p !== ".");
  if (parts.includes("..")) {
    throw new LayerEscapeError(`${what} "${name}" contains ".."`);
  }
  if (parts.some((p) => p.includes("\0"))) {
    throw new LayerEscapeError(`${what} "${name}" contains a NUL byte`);
  }
  return parts;
}

function lstatOrNull(path: string) {
  try {
    return lstatSync(path);
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return null;
    throw error;
  }
}

/** A TarSink writing one layer into `root`. */
export class LayerUnpacker implements TarSink {
  /** Everything this layer created (an opaque marker keeps these, removes the rest). */
  #created = new Set<string>();
  #fd: number | null = null;
  #current: { path: string; entry: TarEntry } | null = null;
  /** Directories get their mode at the very end, so a read-only one can still be filled. */
  readonly #dirModes: Map<string, { mode: number; mtime: number }>;
  /** Counts of what was not created. */
  readonly skipped: UnpackSkipped;

  /** Unpacks into `root` (an existing directory). */
  constructor(
    private readonly root: string,
    private readonly options: UnpackOptions = {},
    shared?: { dirModes: Map<string, { mode: number; mtime: number }>; skipped: UnpackSkipped },
  ) {
    this.#dirModes = shared?.dirModes ?? new Map();
    this.skipped = shared?.skipped ?? { devices: 0, fifos: 0, setIdBits: 0 };
  }

  /**
   * The parent directories of `parts` must be real directories inside the root (created when
   * missing); a symlink or a non-directory on the way refuses the entry.
   */
  #parentOf(parts: string[], name: string): string {
    let dir = this.root;
    for (const part of parts.slice(0, -1)) {
      dir = join(dir, part);
      const stat = lstatOrNull(dir);
      if (stat === null) {
        mkdirSync(dir, { mode: 0o755 });
        this.#own(dir);
        this.#created.add(dir);
      } else if (stat.isSymbolicLink()) {
        throw new LayerEscapeError(
          `entry "${name}" goes through the symlink "${dir.slice(this.root.length + 1)}"`,
        );
      } else if (!stat.isDirectory()) {
        throw new LayerEscapeError(`entry "${name}": "${part}" is not a directory`);
      }
    }
    return dir;
  }

  #own(path: string): void {
    if (this.options.owner) lchownSync(path, this.options.owner.uid, this.options.owner.gid);
  }

  /** Removes what is at `path` (never following a symlink). */
  #clear(path: string): void {
    rmSync(path, { recursive: true, force: true });
  }

  /** Applies the next entry's header. */
  begin(entry: TarEntry): void {
    const parts = safeComponents(entry.name);
    if (parts.length === 0) {
      // The root itself ("./"): only its mode matters.
      if (entry.type === "directory") this.#dirModes.set(this.root, entry);
      return;
    }
    const last = parts[parts.length - 1];
    const dir = this.#parentOf(parts, entry.name);
    if (last === OPAQUE) {
      for (const child of readdirSync(dir)) {
        if (!this.#created.has(join(dir, child))) this.#clear(join(dir, child));
      }
      return;
    }
    if (last.startsWith(WHITEOUT)) {
      const hidden = last.slice(WHITEOUT.length);
      if (hidden === "" || hidden === "." || hidden === "..") {
        throw new LayerEscapeError(`whiteout "${entry.name}" names no entry`);
      }
      this.#clear(join(dir, hidden));
      return;
    }
    const path = join(dir, last);
    const existing = lstatOrNull(path);
    if (existing && !(entry.type === "directory" && existing.isDirectory())) this.#clear(path);
    if (entry.mode & 0o6000) this.skipped.setIdBits++;
    const mode = entry.mode & 0o1777;
    switch (entry.type) {
      case "directory":
        if (!existing?.isDirectory()) mkdirSync(path, { mode: 0o700 });
        this.#own(path);
        this.#dirModes.set(path, { mode, mtime: entry.mtime });
        break;
      case "file": {
        // O_EXCL|O_NOFOLLOW: the path was just cleared; never write through anything there.
        const flags = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL |
          constants.O_NOFOLLOW;
        this.#fd = openSync(path, flags, 0o600);
        this.#current = { path, entry };
        break;
      }
      case "symlink":
        // The link's text is not checked: it is only ever followed inside the sandbox, and this
        // unpacker refuses later entries whose path goes through it.
        symlinkSync(entry.linkname, path);
        this.#own(path);
        break;
      case "hardlink": {
        const targetParts = safeComponents(entry.linkname, `hard link target of "${entry.name}"`);
        const target = join(this.#parentOf(targetParts, entry.linkname), targetParts.at(-1) ?? "");
        const stat = lstatOrNull(target);
        if (targetParts.length === 0 || stat === null || !stat.isFile()) {
          throw new LayerEscapeError(
            `hard link "${entry.name}" → "${entry.linkname}": the target is not a file of the image`,
          );
        }
        linkSync(target, path);
        break;
      }
      case "char":
      case "block":
        this.skipped.devices++;
        return;
      case "fifo":
        this.skipped.fifos++;
        return;
      default:
        throw new LayerEscapeError(`entry "${entry.name}" has an unsupported type`);
    }
    this.#created.add(path);
  }

  /** Writes the current file's next bytes. */
  data(bytes: Uint8Array): void {
    if (this.#fd === null) return;
    let at = 0;
    while (at < bytes.length) at += writeSync(this.#fd, bytes, at, bytes.length - at);
    this.options.onBytes?.(bytes.length);
  }

  /** Closes the current file and sets its mode, owner and time. */
  end(): void {
    if (this.#fd === null || this.#current === null) return;
    closeSync(this.#fd);
    this.#fd = null;
    const { path, entry } = this.#current;
    this.#current = null;
    chmodSync(path, entry.mode & 0o1777);
    this.#own(path);
    utimesSync(path, entry.mtime, entry.mtime);
  }

  /** Closes a file left open by a failed stream. */
  abort(): void {
    if (this.#fd !== null) closeSync(this.#fd);
    this.#fd = null;
  }

  /** Sets the deferred directory modes and times (deepest first); call once after all layers. */
  finishDirectories(): void {
    const paths = [...this.#dirModes.keys()].sort((a, b) => b.length - a.length);
    for (const path of paths) {
      // A later layer may have replaced the directory: never chmod through a symlink.
      if (!lstatOrNull(path)?.isDirectory()) continue;
      const { mode, mtime } = this.#dirModes.get(path)!;
      chmodSync(path, mode);
      utimesSync(path, mtime, mtime);
    }
  }

  /** Shares directory modes and skip counts with the next layer's unpacker. */
  shared() {
    return { dirModes: this.#dirModes, skipped: this.skipped };
  }
}
