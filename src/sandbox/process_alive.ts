/**
 * `processAlive()`: whether a pid names a live process, for telling what a process that died
 * left behind (work directories, cgroups) from what a live one still uses.
 * @module
 */
import process from "node:process";

/**
 * True when `pid` is a live process (also one of another user's: `EPERM`). A pid reused since
 * counts as alive, so a caller deleting by it keeps, never removes, what it cannot tell.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM";
  }
}
