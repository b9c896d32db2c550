/**
 * Byte sizes as people write them (`512M`, `1GiB`, `64k`, `65536`) and the reverse formatting.
 * The one parser of Coop: config (`memory`, `tmp_size`) and `--memory` use it.
 * @module
 */

const UNIT_BYTES: Readonly<Record<string, number>> = {
  "": 1,
  K: 2 ** 10,
  M: 2 ** 20,
  G: 2 ** 30,
  T: 2 ** 40,
};
/** A decimal number, an optional binary unit in either case, an optional `B` or `iB`. */
const SIZE = /^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?$/i;

/**
 * Returns the bytes `value` denotes, or null when it is not a size. Units are binary and
 * case-insensitive (`1k` = `1K` = `1KiB` = `1KB` = 1024); a bare number is bytes; a fraction of
 * a byte rounds down. Zero parses: whether it is allowed is the caller's range to check.
 *
 * @example
 * ```ts
 * parseByteSize("512M"); // 536870912
 * parseByteSize("1.5k"); // 1536
 * parseByteSize("lots"); // null
 * ```
 */
export function parseByteSize(value: string | number): number | null {
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0 ? value : null;
  const match = SIZE.exec(value.trim());
  if (!match) return null;
  const bytes = Math.floor(Number(match[1]) * UNIT_BYTES[match[2].toUpperCase()]);
  return Number.isSafeInteger(bytes) ? bytes : null;
}

/**
 * Writes `bytes` in the largest binary unit that keeps it exact, so `parseByteSize` reads it
 * back.
 *
 * @example
 * ```ts
 * formatByteSize(16 * 2 ** 20); // "16M"
 * formatByteSize(1536); // "1536"
 * ```
 */
export function formatByteSize(bytes: number): string {
  for (const unit of ["T", "G", "M", "K"]) {
    if (bytes !== 0 && bytes % UNIT_BYTES[unit] === 0) return `${bytes / UNIT_BYTES[unit]}${unit}`;
  }
  return String(bytes);
}
