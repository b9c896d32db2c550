/**
 * Errno names and descriptions for the numbers the trampoline reports, from the runtime's own
 * tables (`node:os` constants, `node:util`'s system error map), which both Deno and Node have.
 * @module
 */
import { constants } from "node:os";
import { getSystemErrorMap } from "node:util";

/** Errno numbers by name on this platform (`ERRNO.ENOENT === 2`), from `os.constants.errno`. */
export const ERRNO: Readonly<Record<string, number>> = constants.errno as Record<string, number>;

/** Names by number; where two names share one (EAGAIN/EWOULDBLOCK) the first listed wins. */
const NAME_OF = new Map<number, string>();
for (const [name, errno] of Object.entries(ERRNO)) {
  if (!NAME_OF.has(errno)) NAME_OF.set(errno, name);
}

/** libuv's name and message by code; its codes are the negated errno numbers on Linux. */
const SYSTEM_ERRORS: ReadonlyMap<number, [string, string]> = getSystemErrorMap();

/** `EACCES`, or `errno 123` for a number the platform does not name. */
export function errnoName(errno: number): string {
  return SYSTEM_ERRORS.get(-errno)?.[0] ?? NAME_OF.get(errno) ?? `errno ${errno}`;
}

/** A short human description, e.g. `permission denied`; `errno 8` where libuv has none. */
export function errnoText(errno: number): string {
  return SYSTEM_ERRORS.get(-errno)?.[1] ?? `errno ${errno}`;
}

/** The errno of a failed `node:fs` call, from its `code` (EIO when the error names none). */
export function errnoOf(error: unknown): number {
  const code = (error as { code?: unknown } | null)?.code;
  return (typeof code === "string" ? ERRNO[code] : undefined) ?? ERRNO.EIO;
}

/**
 * True when `error` says a file or program does not exist: errno code `ENOENT` (node:fs,
 * node:child_process), or an error named `NotFound` (Deno's, which stand-in runners may throw).
 */
export function isNotFound(error: unknown): boolean {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  return code === "ENOENT" || name === "NotFound";
}
