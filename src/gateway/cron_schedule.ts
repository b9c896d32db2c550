/**
 * Validates five-field cron schedules (`minute hour day-of-month month day-of-week`).
 * @module
 */

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
