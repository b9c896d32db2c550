/**
 * The little HTTP/1.x the policy proxy needs: parse one request head (its request line and
 * headers; the relay in ffi/relay.c reads it) and write a short response. Bytes map 1:1 to
 * string characters (latin1), so a head is forwarded exactly as received except for the headers
 * the proxy rewrites.
 * @module
 */
import { Buffer } from "node:buffer";

/** Largest request head the proxy reads (request line and headers); HEAD_MAX in ffi/relay.c. */
export const MAX_HEAD_BYTES = 64 * 1024;

/** A parsed request head. */
export interface RequestHead {
  method: string;
  target: string;
  version: string;
  headers: [string, string][];
}

/** Bytes → latin1 string, one character per byte. */
export function bytesToLatin1(bytes: Uint8Array): string {
  let out = "";
  for (let i = 0; i < bytes.length; i += 8192) {
    out += String.fromCharCode(...bytes.subarray(i, i + 8192));
  }
  return out;
}

/** latin1 string → bytes, one byte per character. */
export function latin1ToBytes(text: string): Uint8Array {
  return Uint8Array.from(text, (c) => c.charCodeAt(0) & 0xff);
}

/** Parses a request head (without the final blank line); null when malformed. */
export function parseRequestHead(head: string): RequestHead | null {
  const lines = head.split("\r\n");
  const m = /^([A-Z]+) (\S+) (HTTP\/1\.[01])$/.exec(lines[0]);
  if (!m) return null;
  const headers: [string, string][] = [];
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    if (colon <= 0 || /[\s]/.test(line.slice(0, colon))) return null;
    headers.push([line.slice(0, colon), line.slice(colon + 1).trim()]);
  }
  return { method: m[1], target: m[2], version: m[3], headers };
}

/** The first value of header `name` (case-insensitive), or undefined. */
export function headerValue(head: RequestHead, name: string): string | undefined {
  const lower = name.toLowerCase();
  return head.headers.find(([n]) => n.toLowerCase() === lower)?.[1];
}

/** A complete response with a text body; the connection is closed after it. */
export function textResponse(
  status: number,
  reason: string,
  body: string,
  extraHeaders: Record<string, string> = {},
): Uint8Array {
  const bytes = new TextEncoder().encode(body);
  const headers = {
    "Content-Type": "text/plain; charset=utf-8",
    "Content-Length": String(bytes.length),
    "Connection": "close",
    ...extraHeaders,
  };
  const head = `HTTP/1.1 ${status} ${reason}\r\n` +
    Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join("") + "\r\n";
  return Buffer.concat([latin1ToBytes(head), bytes]);
}
