/**
 * Sizes for people: `0 B`, `812 KiB`, `1.4 GiB` (byte_size.ts's formatter writes exact config
 * values such as `16M`, which a measured size rarely is).
 * @module
 */

/** `bytes` rounded for reading, in B, KiB, MiB, GiB or TiB; `partial` adds "at least". */
export function sizeText(bytes: number, partial = false): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  const shown = unit === 0 || value >= 100 ? Math.round(value).toString() : value.toFixed(1);
  return `${partial ? "at least " : ""}${shown} ${units[unit]}`;
}
