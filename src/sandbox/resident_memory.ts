/**
 * A process's resident set size, from `/proc/<pid>/statm` (the gateway's own for its idle
 * memory release, a live sandbox's processes for `coop sandbox ps`).
 * @module
 */
import { readFileSync } from "node:fs";

const PAGE_BYTES = 4096;

/**
 * The resident set of process `pid` (default: this one) in bytes, or undefined when it cannot
 * be read (no `/proc`, or the process is gone).
 *
 * @example
 * ```ts
 * const rss = residentBytes(); // this process
 * const child = residentBytes(1234) ?? 0;
 * ```
 */
export function residentBytes(pid: number | "self" = "self"): number | undefined {
  try {
    const pages = Number(readFileSync(`/proc/${pid}/statm`, "latin1").split(" ")[1]);
    return Number.isFinite(pages) ? pages * PAGE_BYTES : undefined;
  } catch {
    return undefined;
  }
}
