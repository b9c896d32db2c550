/**
 * Parses durations written on the command line or in config: `500ms`, `30s`, `2m`, `1h`;
 * a bare number means seconds.
 * @module
 */

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Milliseconds for `text`, or undefined when it is not a valid duration. */
export function parseDuration(text: string): number | undefined {
  const match = /^(\d+(?:\.\d+)?)(ms|s|m|h)?$/.exec(text.trim());
  if (!match) return undefined;
  const ms = Number(match[1]) * UNITS[match[2] ?? "s"];
  return ms > 0 && Number.isFinite(ms) ? ms : undefined;
}
