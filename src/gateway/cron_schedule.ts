/**
 * Five-field cron schedules (`minute hour day-of-month month day-of-week`), with the names
 * (`JAN`-`DEC`, `SUN`-`SAT`) and `@` shortcuts of cron(5): validation with config-friendly
 * messages, and the next run time (computed by `croner` on the numeric form).
 * @module
 */
import { Cron } from "croner";

interface Field {
  name: string;
  min: number;
  max: number;
  /** The names the field also takes, for error messages. */
  names?: string;
}

const FIELDS: readonly Field[] = [
  { name: "minute", min: 0, max: 59 },
  { name: "hour", min: 0, max: 23 },
  { name: "day of month", min: 1, max: 31 },
  { name: "month", min: 1, max: 12, names: "JAN-DEC" },
  { name: "day of week", min: 0, max: 7, names: "SUN-SAT" },
];

const ITEM = /^(\*|\d+(?:-\d+)?)(?:\/(\d+))?$/;

/** cron(5)'s shortcuts, as the five fields they stand for. */
const SHORTCUTS: Readonly<Record<string, string>> = {
  "@yearly": "0 0 1 1 *",
  "@annually": "0 0 1 1 *",
  "@monthly": "0 0 1 * *",
  "@weekly": "0 0 * * 0",
  "@daily": "0 0 * * *",
  "@midnight": "0 0 * * *",
  "@hourly": "0 * * * *",
};

/** Names allowed in the month (index 3) and day-of-week (index 4) fields, by number. */
const NAMES: Readonly<Record<number, readonly string[]>> = {
  3: ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"],
  4: ["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/**
 * The schedule with shortcuts expanded and names replaced by numbers (case-insensitive), as
 * five fields; unknown names stay as they are, for the validator to name.
 *
 * @example
 * ```ts
 * numericSchedule("0 9 * * mon-FRI"); // ["0", "9", "*", "*", "1-5"]
 * ```
 */
function numericSchedule(schedule: string): string[] {
  const trimmed = schedule.trim();
  const fields = (SHORTCUTS[trimmed.toLowerCase()] ?? trimmed).split(/\s+/);
  return fields.map((field, i) => {
    const names = NAMES[i];
    if (!names) return field;
    const first = i === 3 ? 1 : 0;
    return field.replace(/[a-z]+/gi, (word) => {
      const n = names.indexOf(word.toLowerCase());
      return n < 0 ? word : String(n + first);
    });
  });
}

function fieldProblem(text: string, field: Field) {
  for (const item of text.split(",")) {
    const match = ITEM.exec(item);
    if (!match) {
      return `${field.name} "${item}" is not *, N, N-M or a list/step of those` +
        (field.names ? ` (names: ${field.names})` : "");
    }
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
  if (schedule.trim().startsWith("@") && !SHORTCUTS[schedule.trim().toLowerCase()]) {
    return `unknown shortcut "${schedule.trim()}" (one of ${Object.keys(SHORTCUTS).join(", ")})`;
  }
  const fields = numericSchedule(schedule);
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
  const cron = new Cron(numericSchedule(schedule).join(" "), {
    paused: true,
    timezone,
    sloppyRanges: true,
  });
  return cron.nextRun(new Date(after))?.getTime() ?? null;
}
