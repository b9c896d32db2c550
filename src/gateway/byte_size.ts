/**
 * Parses sizes written in config (`512M`, `1GiB`, `65536`).
 * @module
 */

const UNITS: Readonly<Record<string, number>> = {
  "": 1,
  K: 2 ** 10,
  M: 2 ** 20,
  G: 2 ** 30,
  T: 2 ** 40,
};
const SIZE = /^(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?$/i;

/**
 * Returns the number of bytes `value` denotes, or null when it is not a size.
 * Units are binary (`1K` = 1024); a bare integer is bytes.
 *
 * @example
 * ```ts
 * parseByteSize("512M"); // 536870912
 * ```
 */
export function parseByteSize(value: string | number): number | null {
  if (typeof value === "number") return Number.isSafeInteger(value) && value >= 0 ? value : null;
  const match = SIZE.exec(value.trim());
  if (!match) return null;
  const bytes = Math.floor(Number(match[1]) * UNITS[match[2].toUpperCase()]);
  return Number.isSafeInteger(bytes) ? bytes : null;
}
