/**
 * Comparison of secrets (tokens, passwords) whose time says nothing about them.
 * @module
 */
import { createHash, timingSafeEqual } from "node:crypto";

function sha256(value: string | Uint8Array): Uint8Array {
  return createHash("sha256").update(value).digest();
}

/**
 * True when `a` and `b` are the same secret. Both are hashed (SHA-256) and the digests compared
 * with `timingSafeEqual`, so the time depends neither on where they differ nor on their
 * lengths (timingSafeEqual alone throws on unequal lengths, which reveals the length).
 * Strings are compared as UTF-8.
 *
 * @example
 * ```ts
 * sameSecret(request.token, configured.token); // true only for the exact same bytes
 * ```
 */
export function sameSecret(a: string | Uint8Array, b: string | Uint8Array): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/**
 * The digest `sameSecret` compares, for a secret checked on every request (a configured token):
 * computed once, then compared with `matchesSecretDigest`.
 *
 * @example
 * ```ts
 * const digest = secretDigest(configured.token);
 * matchesSecretDigest(digest, presentedDigest); // true only for the exact same bytes
 * ```
 */
export function secretDigest(value: string | Uint8Array): Uint8Array {
  return sha256(value);
}

/** True when two digests of `secretDigest` are equal; the time says nothing about either. */
export function matchesSecretDigest(a: Uint8Array, b: Uint8Array): boolean {
  return timingSafeEqual(a, b);
}
