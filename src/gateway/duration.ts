/**
 * Parses durations written in config (`30s`, `5m`, `500ms`, `1h`; a bare number is seconds).
 * @module
 */

const UNITS_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)$/;

/**
 * Returns the milliseconds `value` denotes, or null when it is not a duration.
 *
 * @example
 * ```ts
 * parseDuration("2m"); // 120000
 * ```
 */
export function parseDuration(value: string | number): number | null {
  if (typeof value === "number") return Number.isFinite(value) && value >= 0 ? value * 1000 : null;
  const match = DURATION.exec(value.trim());
  if (!match) return null;
  return Math.round(Number(match[1]) * UNITS_MS[match[2]]);
}
