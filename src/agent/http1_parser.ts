/**
 * An incremental HTTP/1.1 response parser for the provider transport: the status line, the
 * header block (at most `MAX_HEAD_BYTES`), and the body delimited by `content-length`, by
 * `transfer-encoding: chunked` (extensions and trailers read and dropped) or by the connection's
 * close. Interim 1xx responses (100 Continue, 103 Early Hints) are skipped; 101 is delivered so
 * the caller can refuse it. Bytes go in as the socket delivers them, split anywhere.
 * @module
 */
import { Buffer } from "node:buffer";

/** The largest status line plus header block (and chunked trailer block) accepted. */
export const MAX_HEAD_BYTES = 64 * 1024;

/** A response whose framing breaks HTTP/1.1: the connection cannot be trusted any more. */
export class Http1FramingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "Http1FramingError";
  }
}

/** A final response's status line and headers. */
export interface ResponseHead {
  /** The status code (never an interim 1xx other than 101). */
  status: number;
  /** Header names and values in arrival order: name, value, name, value … */
  rawHeaders: string[];
}

/** Where the parser delivers a response. */
export interface ResponseEvents {
  /** The head of the final response; the body follows. */
  head(head: ResponseHead): void;
  /** A piece of the body (a view into the socket's chunk: use it before the next push). */
  body(chunk: Uint8Array): void;
  /** The body is complete. */
  end(): void;
}

type State = "head" | "length" | "chunk_size" | "chunk_data" | "chunk_crlf" | "trailers" | "close";

const CRLF_CRLF = Buffer.from("\r\n\r\n");
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const STATUS_LINE = /^HTTP\/1\.([01]) (\d{3})(?: [^\r\n]*)?$/;
/** A chunk-size line: hex digits, then optional whitespace and `;extensions`. */
const CHUNK_SIZE = /^([0-9A-Fa-f]{1,15})[ \t]*(?:;.*)?$/;

/** Parses one response from a connection's bytes (a new parser for each request on it). */
export class Http1Parser {
  readonly #events: ResponseEvents;
  #state: State | "done" = "head";
  /** Bytes of an unfinished head, size line or trailer block. */
  #pending: Buffer | null = null;
  #remaining = 0;
  #trailerBytes = 0;
  #received = false;
  #keepAlive = true;

  /** Delivers what it parses to `events`; their callbacks may call `stop()`. */
  constructor(events: ResponseEvents) {
    this.#events = events;
  }

  /** True once any byte of a response arrived. */
  get received(): boolean {
    return this.#received;
  }

  /**
   * True once the body has ended and the connection may carry another request: HTTP/1.1, no
   * `connection: close`, a delimited body, and nothing sent after it.
   */
  get reusable(): boolean {
    return this.#state === "done" && this.#keepAlive;
  }

  /** Stops parsing: later bytes are ignored (the caller closes the connection). */
  stop(): void {
    this.#state = "done";
    this.#keepAlive = false;
  }

  /** Parses `chunk`; throws `Http1FramingError` when the bytes break the protocol. */
  push(chunk: Uint8Array): void {
    if (chunk.length === 0) return;
    this.#received = true;
    let buf = Buffer.isBuffer(chunk)
      ? chunk
      : Buffer.from(chunk.buffer, chunk.byteOffset, chunk.length);
    if (this.#pending) {
      buf = Buffer.concat([this.#pending, buf]);
      this.#pending = null;
    }
    let at = 0;
    while (at < buf.length) {
      switch (this.#state) {
        case "done":
          // Bytes after the response (none were asked for): never reuse this connection.
          this.#keepAlive = false;
          return;
        case "head":
          at = this.#head(buf, at);
          break;
        case "length": {
          const n = Math.min(this.#remaining, buf.length - at);
          this.#remaining -= n;
          const piece = buf.subarray(at, at + n);
          at += n;
          this.#events.body(piece);
          if (this.#remaining === 0 && this.#state === "length") this.#finish(at < buf.length);
          break;
        }
        case "close":
          this.#events.body(at === 0 ? buf : buf.subarray(at));
          return;
        case "chunk_size":
        case "chunk_crlf":
        case "trailers":
          at = this.#line(buf, at);
          break;
        case "chunk_data": {
          const n = Math.min(this.#remaining, buf.length - at);
          this.#remaining -= n;
          const piece = buf.subarray(at, at + n);
          at += n;
          this.#events.body(piece);
          if (this.#remaining === 0 && this.#state === "chunk_data") this.#state = "chunk_crlf";
          break;
        }
      }
    }
  }

  /**
   * The server closed its side: ends a close-delimited body. False when the response is
   * incomplete (nothing came, or its head or body was cut short).
   */
  finish(): boolean {
    if (this.#state === "close") this.#finish(false);
    return this.#state === "done";
  }

  /** Reads the head from `at` if it is complete; returns where the body starts. */
  #head(buf: Buffer, at: number): number {
    const end = buf.indexOf(CRLF_CRLF, at);
    if (end < 0) {
      if (buf.length - at > MAX_HEAD_BYTES) throw tooLarge("header block");
      this.#pending = buf.subarray(at);
      return buf.length;
    }
    if (end - at > MAX_HEAD_BYTES) throw tooLarge("header block");
    const lines = buf.toString("latin1", at, end).split("\r\n");
    const status = STATUS_LINE.exec(lines[0]);
    if (!status) throw new Http1FramingError(`not an HTTP/1.x status line: ${quote(lines[0])}`);
    const code = Number(status[2]);
    const rawHeaders: string[] = [];
    let length: string | null = null;
    let chunked = false;
    let encoded = false;
    let close = status[1] === "0";
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i];
      const colon = line.indexOf(":");
      const name = colon > 0 ? line.slice(0, colon) : "";
      if (!TOKEN.test(name)) throw new Http1FramingError(`not a header line: ${quote(line)}`);
      const value = line.slice(colon + 1).trim();
      rawHeaders.push(name, value);
      const lower = name.toLowerCase();
      if (lower === "content-length") {
        if (!/^\d{1,15}$/.test(value) || (length !== null && length !== value)) {
          throw new Http1FramingError(`an invalid content-length: ${quote(value)}`);
        }
        length = value;
      } else if (lower === "transfer-encoding") {
        encoded = true;
        chunked = /(?:^|,)\s*chunked\s*$/i.test(value);
      } else if (lower === "connection" && /(?:^|,)\s*close\s*(?:,|$)/i.test(value)) {
        close = true;
      }
    }
    at = end + 4;
    if (code >= 100 && code < 200 && code !== 101) return at; // interim: the real one follows
    // After 101 the connection speaks another protocol: never reused.
    this.#keepAlive = !close && code !== 101;
    if (code === 204 || code === 304 || code === 101) {
      this.#events.head({ status: code, rawHeaders });
      if (this.#state === "head") this.#finish(at < buf.length);
      return at;
    }
    if (encoded) {
      // Transfer-encoding wins over content-length; a sender using both is suspect: close after.
      if (length !== null) this.#keepAlive = false;
      this.#state = chunked ? "chunk_size" : "close";
    } else if (length !== null) {
      this.#remaining = Number(length);
      this.#state = "length";
    } else {
      this.#state = "close";
    }
    if (this.#state === "close") this.#keepAlive = false;
    this.#events.head({ status: code, rawHeaders });
    if (this.#state === "length" && this.#remaining === 0) this.#finish(at < buf.length);
    return at;
  }

  /** Reads one line of the chunked framing if it is complete; returns where the next begins. */
  #line(buf: Buffer, at: number): number {
    const nl = buf.indexOf(10, at);
    if (nl < 0) {
      const limit = this.#state === "trailers" ? MAX_HEAD_BYTES - this.#trailerBytes : 4096;
      if (buf.length - at > limit) {
        throw tooLarge(this.#state === "trailers" ? "trailer block" : "chunk-size line");
      }
      this.#pending = buf.subarray(at);
      return buf.length;
    }
    if (nl === at || buf[nl - 1] !== 13) {
      throw new Http1FramingError("a chunk line not ending in CRLF");
    }
    const line = buf.toString("latin1", at, nl - 1);
    if (this.#state === "chunk_crlf") {
      if (line !== "") throw new Http1FramingError("chunk data longer than its size");
      this.#state = "chunk_size";
    } else if (this.#state === "chunk_size") {
      const size = CHUNK_SIZE.exec(line);
      if (!size) throw new Http1FramingError(`an invalid chunk size: ${quote(line)}`);
      this.#remaining = parseInt(size[1], 16);
      this.#trailerBytes = 0;
      this.#state = this.#remaining === 0 ? "trailers" : "chunk_data";
    } else {
      // A trailer field (dropped) or the empty line ending the message.
      this.#trailerBytes += nl + 1 - at;
      if (this.#trailerBytes > MAX_HEAD_BYTES) throw tooLarge("trailer block");
      if (line === "") this.#finish(nl + 1 < buf.length);
    }
    return nl + 1;
  }

  /** The body is complete; `extra` when more bytes follow it (not asked for: no reuse). */
  #finish(extra: boolean): void {
    if (extra) this.#keepAlive = false;
    this.#state = "done";
    this.#events.end();
  }
}

function tooLarge(what: string): Http1FramingError {
  return new Http1FramingError(`its ${what} is larger than ${MAX_HEAD_BYTES / 1024} KiB`);
}

/** A received line as a message shows it: at most 80 characters, control bytes escaped. */
function quote(line: string): string {
  const shown = line.length > 80 ? `${line.slice(0, 80)}…` : line;
  return JSON.stringify(shown);
}
