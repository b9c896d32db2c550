/**
 * Pairing codes: 8 characters from an alphabet without look-alikes (no 0, O, 1, I), shown as
 * `XXXX-XXXX`; 32 symbols, so 40 random bits. Only a SHA-256 of a code is stored.
 * @module
 */
import { createHash, randomBytes } from "node:crypto";

/** The 32 symbols of a code: A-Z without I and O, and 2-9. */
export const PAIRING_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

/** Symbols in a code. */
export const PAIRING_CODE_LENGTH = 8;

/** Returns a new random code, formatted `XXXX-XXXX`. */
export function newPairingCode(): string {
  // 32 divides 256: the low five bits of a random byte pick a symbol without bias.
  const symbols = [...randomBytes(PAIRING_CODE_LENGTH)].map((byte) => PAIRING_ALPHABET[byte & 31]);
  return formatPairingCode(symbols.join(""));
}

/** `ABCDEFGH` → `ABCD-EFGH`. */
export function formatPairingCode(symbols: string): string {
  return `${symbols.slice(0, 4)}-${symbols.slice(4)}`;
}

/**
 * Reads a code as a person typed it (any case, with or without the dash or spaces): its eight
 * symbols, or null with nothing else to say when it cannot be a code.
 */
export function normalizePairingCode(typed: string): string | null {
  const symbols = typed.toUpperCase().replace(/[\s-]/g, "");
  if (symbols.length !== PAIRING_CODE_LENGTH) return null;
  for (const c of symbols) if (!PAIRING_ALPHABET.includes(c)) return null;
  return symbols;
}

/** The stored form of a code: hex SHA-256 of its eight symbols. */
export function hashPairingCode(code: string): string {
  const symbols = normalizePairingCode(code) ?? code;
  return createHash("sha256").update(`coop-pairing:${symbols}`).digest("hex");
}
