/**
 * Five-field cron schedules (`minute hour day-of-month month day-of-week`), with the names
 * (`JAN`-`DEC`, `SUN`-`SAT`) and `@` shortcuts of cron(5). `croner` parses, validates and
 * computes the next run; a thin gate in front of it keeps to Coop's format (five fields, no
 * croner extensions such as seconds, `L`, `W`, `#` or `?`) and names the field at fault.
 * @module
 */
import { Cron, type CronOptions } from "croner";

interface Field {
  name: string;
  min: number;
  max: number;
  /** The names the field also takes (lower case), for the gate and its messages. */
  names?: readonly string[];
  /** What croner adds to the field's values in its messages (it counts months and days from 0). */
  offset: number;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const WEEKDAYS = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

const FIELDS: readonly Field[] = [
  { name: "minute", min: 0, max: 59, offset: 0 },
  { name: "hour", min: 0, max: 23, offset: 0 },
  { name: "day of month", min: 1, max: 31, offset: 1 },
  { name: "month", min: 1, max: 12, names: MONTHS, offset: 1 },
  { name: "day of week", min: 0, max: 7, names: WEEKDAYS, offset: 0 },
];

/** cron(5)'s shortcuts; croner knows the same ones. */
const SHORTCUTS = [
  "@yearly",
  "@annually",
  "@monthly",
  "@weekly",
  "@daily",
  "@midnight",
  "@hourly",
];

/**
 * Day-of-month and day-of-week combine with OR when both are restricted (classic cron), which is
 * croner's default; 0 and 7 are both Sunday. `sloppyRanges` accepts `N/step` (N through the
 * field's maximum), as cronie does.
 */
const OPTIONS: CronOptions = { paused: true, mode: "5-part", sloppyRanges: true };

/** `JAN-DEC`, for messages. */
function nameRange(names: readonly string[]): string {
  return `${names[0]}-${names.at(-1)}`.toUpperCase();
}

/** The gate: only what cron(5) writes — digits, `*`, `,`, `-`, `/`, and the field's names. */
function gateProblem(text: string, field: Field): string | null {
  const allowed = field.names ? /^[0-9a-z*,/-]+$/i : /^[0-9*,/-]+$/;
  if (!allowed.test(text)) {
    const names = field.names ? ` and the names ${nameRange(field.names)}` : "";
    return `${field.name} "${text}" may only use digits, *, ",", "-" and "/"${names}`;
  }
  for (const word of text.match(/[a-z]+/gi) ?? []) {
    if (!field.names!.includes(word.toLowerCase())) {
      return `${field.name} "${text}": "${word}" is not one of ${nameRange(field.names!)}`;
    }
  }
  return null;
}

/** croner's verdict on one field alone (the others `*`), in the field's own terms. */
function cronerProblem(fields: readonly string[], i: number): string | null {
  try {
    new Cron(FIELDS.map((_, j) => (j === i ? fields[i] : "*")).join(" "), OPTIONS);
    return null;
  } catch (error) {
    const field = FIELDS[i];
    const message = (error as Error).message.replace(/^CronPattern: (Syntax error, )?/, "");
    const value = /^Invalid value for \w+: (-?\d+)/.exec(message);
    if (value) {
      return `${field.name} ${Number(value[1]) + field.offset} is outside ` +
        `${field.min}-${field.max}`;
    }
    return `${field.name} "${fields[i]}": ${message.replace(/\.$/, "")}`;
  }
}

/**
 * Returns why `schedule` is not a valid five-field cron expression, or null when it is.
 *
 * @example
 * ```ts
 * cronScheduleProblem("0 9 * * mon-fri"); // null
 * cronScheduleProblem("0 24 * * *"); // "hour 24 is outside 0-23"
 * ```
 */
export function cronScheduleProblem(schedule: string): string | null {
  const trimmed = schedule.trim();
  if (trimmed.startsWith("@")) {
    return SHORTCUTS.includes(trimmed.toLowerCase())
      ? null
      : `unknown shortcut "${trimmed}" (one of ${SHORTCUTS.join(", ")})`;
  }
  const fields = trimmed.split(/\s+/);
  if (fields.length !== 5) {
    return `expected 5 fields (minute hour day-of-month month day-of-week), got ${fields.length}`;
  }
  for (let i = 0; i < 5; i++) {
    const problem = gateProblem(fields[i], FIELDS[i]) ?? cronerProblem(fields, i);
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
  const cron = new Cron(schedule.trim().toLowerCase(), { ...OPTIONS, timezone });
  return cron.nextRun(new Date(after))?.getTime() ?? null;
}
