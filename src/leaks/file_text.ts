/**
 * The text of a file as a person would read it, and the same file again with other text: UTF-8,
 * or UTF-16 (with a byte-order mark, or without one when every other byte is zero — what Windows
 * PowerShell's `Out-File` writes). Read as UTF-8, UTF-16 text has a NUL after every ASCII
 * character, and a secret in it matches nothing.
 * @module
 */

/** How a file's text is encoded. */
export interface FileEncoding {
  label: "utf-8" | "utf-16le" | "utf-16be";
  /** Whether the file starts with a byte-order mark (kept when the file is written again). */
  bom: boolean;
}

/** The encoding of `bytes`: UTF-16 by its mark or its zero bytes, else UTF-8. */
export function fileEncoding(bytes: Uint8Array): FileEncoding {
  if (bytes[0] === 0xff && bytes[1] === 0xfe) return { label: "utf-16le", bom: true };
  if (bytes[0] === 0xfe && bytes[1] === 0xff) return { label: "utf-16be", bom: true };
  const sample = bytes.subarray(0, Math.min(bytes.length, 1024) & ~1);
  if (sample.length < 4) return { label: "utf-8", bom: false };
  let zeroEven = 0, zeroOdd = 0;
  for (let i = 0; i < sample.length; i += 2) {
    if (sample[i] === 0) zeroEven++;
    if (sample[i + 1] === 0) zeroOdd++;
  }
  const pairs = sample.length / 2;
  // Mostly ASCII text in UTF-16: one byte of each pair is zero, the other is not.
  if (zeroOdd >= pairs * 0.6 && zeroEven <= pairs * 0.1) return { label: "utf-16le", bom: false };
  if (zeroEven >= pairs * 0.6 && zeroOdd <= pairs * 0.1) return { label: "utf-16be", bom: false };
  return { label: "utf-8", bom: false };
}

/** `bytes` decoded as `encoding` (its byte-order mark left out). */
export function decodeFileText(bytes: Uint8Array, encoding: FileEncoding): string {
  return new TextDecoder(encoding.label).decode(bytes);
}

/** `text` encoded as `encoding`, its byte-order mark again if it had one. */
export function encodeFileText(text: string, encoding: FileEncoding): Uint8Array {
  if (encoding.label === "utf-8") return new TextEncoder().encode(text);
  const offset = encoding.bom ? 2 : 0;
  const out = new Uint8Array(offset + text.length * 2);
  const view = new DataView(out.buffer);
  const littleEndian = encoding.label === "utf-16le";
  if (encoding.bom) view.setUint16(0, 0xfeff, littleEndian);
  for (let i = 0; i < text.length; i++) {
    view.setUint16(offset + 2 * i, text.charCodeAt(i), littleEndian);
  }
  return out;
}
