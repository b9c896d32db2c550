/**
 * The forms in which a secret the gateway holds may show up in text: as it is, base64 and
 * base64url (at each of the three byte alignments it can have inside a longer encoded text),
 * hex in either case, and URL-encoded.
 * @module
 */
import { Buffer } from "node:buffer";

/** How a secret was written. */
export type SecretForm = "exact" | "base64" | "base64url" | "hex" | "url-encoded";

/** One string to look for, and the form it is. */
export interface SecretVariant {
  text: string;
  form: SecretForm;
}

/** Shorter encoded fragments would match by chance; a secret that short is not looked for. */
export const MIN_SECRET_LENGTH = 8;

/**
 * The part of `bytes`' base64 that does not depend on what surrounds them when they sit at
 * byte offset `alignment` (0–2) of a longer encoded text: the groups shared with neighbouring
 * bytes are left out.
 */
function stableBase64(bytes: Uint8Array, alignment: number, url: boolean): string {
  const padded = Buffer.concat([Buffer.alloc(alignment), bytes]);
  const encoded = padded.toString(url ? "base64url" : "base64").replace(/=+$/, "");
  const head = alignment === 0 ? 0 : 4;
  const full = Math.floor(padded.length / 3) * 4; // characters of whole groups
  return encoded.slice(head, full);
}

/**
 * Every form of `secret` worth looking for, without duplicates.
 *
 * @example
 * ```ts
 * secretVariants("sk-ant-api03-abcdef").map((v) => v.form);
 * // ["exact", "base64", "base64", "base64", "base64url", …, "hex", "hex"]
 * ```
 */
export function secretVariants(secret: string): SecretVariant[] {
  const bytes = new TextEncoder().encode(secret);
  const found = new Map<string, SecretForm>();
  const add = (text: string, form: SecretForm) => {
    if (text.length >= MIN_SECRET_LENGTH && !found.has(text)) found.set(text, form);
  };
  add(secret, "exact");
  for (const url of [false, true]) {
    for (let alignment = 0; alignment < 3; alignment++) {
      add(stableBase64(bytes, alignment, url), url ? "base64url" : "base64");
    }
  }
  const hex = Buffer.from(bytes).toString("hex");
  add(hex, "hex");
  add(hex.toUpperCase(), "hex");
  const encoded = encodeURIComponent(secret);
  add(encoded, "url-encoded");
  add(encoded.replace(/%[0-9A-F]{2}/g, (e) => e.toLowerCase()), "url-encoded");
  return [...found].map(([text, form]) => ({ text, form }));
}
