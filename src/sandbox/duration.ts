/**
 * Durations as people write them (`500ms`, `30s`, `5m`, `1h`, or a number of seconds), the
 * longest timer the runtime keeps, and the reverse formatting. The one parser of Coop: config,
 * the command line and the sandbox's own timeout check all use it.
 * @module
 */

const UNIT_MS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
/** A decimal number, then an optional unit (spaces between allowed); no unit means seconds. */
const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h)?$/;

/**
 * The longest timeout a timer can hold: 2³¹−1 ms (about 24.8 days). `setTimeout` stores the
 * delay in a signed 32-bit integer and fires a longer one after about 1 ms instead.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Returns the whole milliseconds `value` denotes, or null when it is not a duration.
 * A number (a TOML integer or float) or a bare numeral means seconds; fractions round to the
 * nearest millisecond. Zero parses: whether it is allowed is the caller's range to check.
 *
 * @example
 * ```ts
 * parseDuration("2m"); // 120000
 * parseDuration("1.5s"); // 1500
 * parseDuration(30); // 30000
 * parseDuration("soon"); // null
 * ```
 */
export function parseDuration(value: string | number): number | null {
  let ms: number;
  if (typeof value === "number") {
    if (!Number.isFinite(value) || value < 0) return null;
    ms = Math.round(value * 1000);
  } else {
    const match = DURATION.exec(value.trim());
    if (!match) return null;
    ms = Math.round(Number(match[1]) * UNIT_MS[match[2] ?? "s"]);
  }
  return Number.isSafeInteger(ms) ? ms : null;
}

/**
 * Writes `ms` in the largest unit that keeps it exact, so `parseDuration` reads it back.
 *
 * @example
 * ```ts
 * formatDuration(120_000); // "2m"
 * formatDuration(1500); // "1500ms"
 * ```
 */
export function formatDuration(ms: number): string {
  for (const unit of ["h", "m", "s"]) {
    if (ms !== 0 && ms % UNIT_MS[unit] === 0) return `${ms / UNIT_MS[unit]}${unit}`;
  }
  return `${ms}ms`;
}

/**
 * Returns why `ms` cannot be a timeout (below 1 ms, above `MAX_TIMER_MS`), or null when it can.
 *
 * @example
 * ```ts
 * timeoutProblem(0); // "must be from 1ms to 2147483647ms (about 24.8 days), got 0ms"
 * ```
 */
export function timeoutProblem(ms: number): string | null {
  if (ms >= 1 && ms <= MAX_TIMER_MS) return null;
  const got = Number.isFinite(ms) ? formatDuration(ms) : String(ms);
  return `must be from 1ms to ${MAX_TIMER_MS}ms (about 24.8 days), got ${got}`;
}
