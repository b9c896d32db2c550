/**
 * Config values written with units (durations, sizes), converted to numbers and held to the
 * range in which the sandbox can run a command at all.
 * @module
 */
import { z } from "zod";
import { formatByteSize, parseByteSize } from "../sandbox/byte_size.ts";
import { formatDuration, MAX_TIMER_MS, parseDuration } from "../sandbox/duration.ts";
import {
  MAX_MEMORY_BYTES,
  MAX_TMP_SIZE_BYTES,
  MIN_MEMORY_BYTES,
  MIN_TMP_SIZE_BYTES,
} from "../sandbox/policy.ts";

/** Renders a config value for an error message. */
export function showValue(value: unknown): string {
  if (value === undefined) return "nothing";
  if (typeof value === "string") return JSON.stringify(value);
  if (Array.isArray(value)) return "an array";
  if (value !== null && typeof value === "object") return "a table";
  return String(value);
}

/** How one kind of unit value is read, written back and described. */
interface Unit {
  kind: string;
  example: string;
  parse: (value: string | number) => number | null;
  format: (n: number) => string;
}

/** A config value with a unit, converted to a number (milliseconds, bytes) by its schema. */
export type UnitSchema = z.ZodPipe<z.ZodUnknown, z.ZodTransform<number, unknown>>;

/** A value of `unit` between `min` and `max` (inclusive); `note` explains the bounds. */
function converted(unit: Unit, min: number, max: number, note: string): UnitSchema {
  return z.unknown().transform((value, ctx) => {
    const parsed = typeof value === "string" || typeof value === "number"
      ? unit.parse(value)
      : null;
    if (parsed === null) {
      ctx.addIssue({
        code: "custom",
        message: `expected ${unit.kind} like ${unit.example}, got ${showValue(value)}`,
      });
      return z.NEVER;
    }
    if (parsed < min || parsed > max) {
      ctx.addIssue({
        code: "custom",
        message: `must be from ${unit.format(min)} to ${unit.format(max)} (${note}), got ${
          showValue(value)
        }`,
      });
      return z.NEVER;
    }
    return parsed;
  });
}

const DURATION: Unit = {
  kind: "a duration",
  example: `"30s", "5m" or "500ms"`,
  parse: parseDuration,
  format: formatDuration,
};

/**
 * A command timeout: at least 1 ms (0 would kill every command before it ran) and at most the
 * timer's ceiling (a longer one overflows and fires after about 1 ms).
 */
export const timeoutDuration: UnitSchema = converted(
  DURATION,
  1,
  MAX_TIMER_MS,
  "the longest a timer holds is about 24.8 days",
);

const SIZE: Unit = {
  kind: "a size",
  example: `"512M" or "1G"`,
  parse: parseByteSize,
  format: formatByteSize,
};

/** `memory`: below the floor not even a shell starts in the sandbox (see MIN_MEMORY_BYTES). */
export const memorySize: UnitSchema = converted(
  SIZE,
  MIN_MEMORY_BYTES,
  MAX_MEMORY_BYTES,
  "less cannot start a shell",
);

/** `tmp_size`: the size of the sandbox's `/tmp` (see MIN_TMP_SIZE_BYTES). */
export const tmpSize: UnitSchema = converted(
  SIZE,
  MIN_TMP_SIZE_BYTES,
  MAX_TMP_SIZE_BYTES,
  "0 would mean no limit at all",
);

/** `[pairing] code_ttl`: how long a pairing code stays valid, one minute to one week. */
export const pairingCodeTtl: UnitSchema = converted(
  DURATION,
  60_000,
  7 * 24 * 3_600_000,
  "a code must live long enough to be passed on, and not linger",
);

/** Default `max_send_file_size`: 10 MiB. */
export const DEFAULT_MAX_SEND_FILE_BYTES = 10 * 2 ** 20;

/** `max_send_file_size`: one file `send_file` sends; messengers take at most tens of MiB. */
export const sendFileSize: UnitSchema = converted(
  SIZE,
  1,
  2 ** 30,
  "one file goes into one chat message",
);

/** `disk_quota`: what a workspace may hold on disk (docs/limits.md "Disk and inode quotas"). */
export const diskQuotaSize: UnitSchema = converted(
  SIZE,
  2 ** 20,
  2 ** 50,
  "the workspace's disk quota",
);
