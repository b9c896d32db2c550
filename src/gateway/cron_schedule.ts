/**
 * Five-field cron schedules (`minute hour day-of-month month day-of-week`): validation with
 * config-friendly messages, and the next run time (computed by `croner`).
 * @module
 */
import { Cron } from "croner";

const FIELDS: ReadonlyArray<{ name: string; min: number; max: number }> = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12 },
  { name: "day of week", min: 0, max: 7 },
];

const ITEM = /^(\*|\d+(?:-\d+)?)(?:\/(\d+))?$/;

function fieldProblem(text: string, field: { name: string; min: number; max: number }) {
  for (const item of text.split(",")) {
    const match = ITEM.exec(item);
    if (!match) return `${field.name} "${item}" is not *, N, N-M or a list/step of those`;
    if (match[2] !== undefined && Number(match[2]) === 0) return `${field.name} step must be > 0`;
    if (match[2] !== undefined && Number(match[2]) > field.max) {
      return `${field.name} step ${match[2]} is larger than ${field.max}`;
    }
    if (match[1] === "*") continue;
    const [low, high] = match[1].split("-").map(Number);
    for (const n of [low, high ?? low]) {
      if (n < field.min || n > field.max) {
        return `${field.name} ${n} is outside ${field.min}-${field.max}`;
      }
    }
    if (high !== undefined && high < low) return `${field.name} range ${match[1]} is backwards`;
  }
  return null;
}

/** Returns why `schedule` is not a valid five-field cron expression, or null when it is. */
export function cronScheduleProblem(schedule: string): string | null {
  const fields = schedule.trim().split(/\s+/);
  if (fields.length !== 5) {
    return `expected 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
  }
  for (let i = 0; i < 5; i++) {
    const problem = fieldProblem(fields[i], FIELDS[i]);
    if (problem) return problem;
  }
  return null;
}

/**
 * Returns the first time `schedule` fires strictly after `after` (ms since the epoch), or null
 * when it never fires again (e.g. `0 0 31 2 *`). `timezone` defaults to the gateway's own.
 *
 * @example
 * ```ts
 * nextCronRun("0 9 * * *", Date.UTC(2025, 0, 1, 9), "UTC"); // Date.UTC(2025, 0, 2, 9)
 * ```
 */
export function nextCronRun(schedule: string, after: number, timezone?: string): number | null {
  // Day-of-month and day-of-week combine with OR when both are restricted (classic cron), which
  // is croner's default; 0 and 7 are both Sunday. `sloppyRanges` accepts `N/step` (N through the
  // field's maximum), which the validator above allows, as cronie does.
  const cron = new Cron(schedule.trim(), { paused: true, timezone, sloppyRanges: true });
  return cron.nextRun(new Date(after))?.getTime() ?? null;
}
