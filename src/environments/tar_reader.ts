/**
 * A small streaming tar reader (ustar, pax `path`/`linkpath`/`size` records, GNU long names):
 * enough for OCI layers and mmdebstrap's output. Bytes are pushed in chunks of any size; each
 * entry is handed to a sink as a header, its data in pieces, and an end. It checks every
 * header's checksum and never interprets a name: `layer_unpack.ts` decides what a name may be.
 * @module
 */
import { CoopError } from "../errors/coop_error.ts";

/** What an entry is, from its type flag. */
export type TarEntryType =
  | "file"
  | "hardlink"
  | "symlink"
  | "char"
  | "block"
  | "directory"
  | "fifo"
  | "other";

/** One entry's header, long names and pax records already applied. */
export interface TarEntry {
  /** The path as written in the archive (not normalised). */
  name: string;
  /** The target of a link (symlink text or hard link path). */
  linkname: string;
  type: TarEntryType;
  /** Permission bits including set-id and sticky bits (`& 0o7777`). */
  mode: number;
  /** Bytes of data that follow (0 for everything but files). */
  size: number;
  /** Modification time, seconds since the epoch. */
  mtime: number;
}

/** Receives a tar stream's entries in order. */
export interface TarSink {
  /** A new entry starts; its data (if any) follows. */
  begin(entry: TarEntry): void;
  /** The next piece of the current entry's data. */
  data(bytes: Uint8Array): void;
  /** The current entry's data is complete. */
  end(): void;
}

/** The archive is not a well-formed tar stream. */
export class TarFormatError extends CoopError {
  /** `message` says what was wrong and at which byte offset. */
  constructor(message: string) {
    super("environment.tar_format", message);
    this.name = "TarFormatError";
  }
}

const BLOCK = 512;
const decoder = new TextDecoder();

/** Type flags and the entry type each stands for. */
const TYPES: Record<string, TarEntryType> = {
  "0": "file",
  "\0": "file",
  "7": "file",
  "1": "hardlink",
  "2": "symlink",
  "3": "char",
  "4": "block",
  "5": "directory",
  "6": "fifo",
};

function cString(block: Uint8Array, start: number, length: number): string {
  const field = block.subarray(start, start + length);
  const nul = field.indexOf(0);
  return decoder.decode(nul < 0 ? field : field.subarray(0, nul));
}

/** An octal field, or GNU base-256 when its high bit is set. */
function numeric(block: Uint8Array, start: number, length: number): number {
  if (block[start] & 0x80) {
    let value = block[start] & 0x7f;
    for (let i = start + 1; i < start + length; i++) value = value * 256 + block[i];
    return value;
  }
  const text = cString(block, start, length).trim();
  if (text === "") return 0;
  if (!/^[0-7]+$/.test(text)) throw new TarFormatError(`bad numeric header field "${text}"`);
  return parseInt(text, 8);
}

function checksumOk(block: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i];
  return sum === numeric(block, 148, 8);
}

/** Parses `len key=value\n` pax records. */
function paxRecords(bytes: Uint8Array): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  while (at < bytes.length) {
    const space = bytes.indexOf(0x20, at);
    if (space < 0) break;
    const length = parseInt(decoder.decode(bytes.subarray(at, space)), 10);
    if (!Number.isSafeInteger(length) || length <= 0 || at + length > bytes.length) {
      throw new TarFormatError("malformed pax extended header");
    }
    const record = decoder.decode(bytes.subarray(space + 1, at + length - 1));
    const eq = record.indexOf("=");
    if (eq > 0) records.set(record.slice(0, eq), record.slice(eq + 1));
    at += length;
  }
  return records;
}

/** Largest metadata entry (pax header, GNU long name) accepted: 1 MiB. */
const MAX_META_BYTES = 1 << 20;

/** A push parser: feed it with `push()`, then call `finish()`. */
export class TarParser {
  #pending: Uint8Array[] = [];
  #pendingBytes = 0;
  /** Data bytes still to deliver for the current entry, then padding to skip. */
  #remaining = 0;
  #padding = 0;
  /** Collecting a metadata entry's body (pax or GNU long name) instead of passing it on. */
  #meta: { kind: string; parts: Uint8Array[]; size: number } | null = null;
  #pax = new Map<string, string>();
  #longName: string | null = null;
  #longLink: string | null = null;
  #offset = 0;
  #ended = false;
  #inEntry = false;

  /** Entries go to `sink`. */
  constructor(private readonly sink: TarSink) {}

  /** Feeds the next bytes of the archive. */
  push(chunk: Uint8Array): void {
    let at = 0;
    while (at < chunk.length && !this.#ended) {
      if (this.#remaining > 0) {
        const take = Math.min(this.#remaining, chunk.length - at);
        const piece = chunk.subarray(at, at + take);
        if (this.#meta) this.#meta.parts.push(piece.slice());
        else this.sink.data(piece);
        this.#remaining -= take;
        at += take;
        this.#offset += take;
        if (this.#remaining === 0) this.#finishEntry();
        continue;
      }
      if (this.#padding > 0) {
        const skip = Math.min(this.#padding, chunk.length - at);
        this.#padding -= skip;
        at += skip;
        this.#offset += skip;
        continue;
      }
      const need = BLOCK - this.#pendingBytes;
      const piece = chunk.subarray(at, at + need);
      this.#pending.push(piece.slice());
      this.#pendingBytes += piece.length;
      at += piece.length;
      if (this.#pendingBytes === BLOCK) {
        const block = concat(this.#pending, BLOCK);
        this.#pending = [];
        this.#pendingBytes = 0;
        this.#header(block);
        this.#offset += BLOCK;
      }
    }
  }

  /** The archive ended; throws when it stopped in the middle of an entry. */
  finish(): void {
    if (this.#remaining > 0 || this.#pendingBytes > 0 || this.#meta) {
      throw new TarFormatError(`archive truncated at byte ${this.#offset}`);
    }
  }

  #header(block: Uint8Array): void {
    if (block.every((b) => b === 0)) {
      // The end-of-archive marker; anything after it is ignored, as tar does.
      this.#ended = true;
      return;
    }
    if (!checksumOk(block)) throw new TarFormatError(`bad header checksum at byte ${this.#offset}`);
    const flag = String.fromCharCode(block[156]);
    const size = numeric(block, 124, 12);
    this.#padding = (BLOCK - (size % BLOCK)) % BLOCK;
    if (flag === "x" || flag === "g" || flag === "L" || flag === "K") {
      if (size > MAX_META_BYTES) throw new TarFormatError(`metadata entry of ${size} bytes`);
      this.#meta = { kind: flag, parts: [], size };
      this.#remaining = size;
      if (size === 0) this.#finishEntry();
      return;
    }
    const prefix = block[257] === 0x75 /* "u"star */ ? cString(block, 345, 155) : "";
    const plain = cString(block, 0, 100);
    const entry: TarEntry = {
      name: this.#pax.get("path") ?? this.#longName ?? (prefix ? `${prefix}/${plain}` : plain),
      linkname: this.#pax.get("linkpath") ?? this.#longLink ?? cString(block, 157, 100),
      type: TYPES[flag] ?? "other",
      mode: numeric(block, 100, 8) & 0o7777,
      size: this.#pax.has("size") ? Number(this.#pax.get("size")) : size,
      mtime: this.#pax.has("mtime")
        ? Math.floor(Number(this.#pax.get("mtime")))
        : numeric(block, 136, 12),
    };
    if (!Number.isSafeInteger(entry.size) || entry.size < 0) {
      throw new TarFormatError(`bad size for "${entry.name}"`);
    }
    this.#padding = (BLOCK - (entry.size % BLOCK)) % BLOCK;
    this.#pax = new Map();
    this.#longName = null;
    this.#longLink = null;
    this.sink.begin(entry);
    this.#inEntry = true;
    this.#remaining = entry.size;
    if (entry.size === 0) this.#finishEntry();
  }

  #finishEntry(): void {
    if (this.#meta) {
      const body = concat(this.#meta.parts, this.#meta.size);
      if (this.#meta.kind === "x") this.#pax = paxRecords(body);
      else if (this.#meta.kind === "L") this.#longName = cString(body, 0, body.length);
      else if (this.#meta.kind === "K") this.#longLink = cString(body, 0, body.length);
      this.#meta = null;
      return;
    }
    if (this.#inEntry) {
      this.#inEntry = false;
      this.sink.end();
    }
  }
}

function concat(parts: Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
