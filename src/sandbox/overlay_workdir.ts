/**
 * A fresh overlayfs work directory for each sandbox of an environment, removed after it ends
 * on the off-loop worker.
 *
 * Mounting an overlay over a work directory it used before makes the kernel delete and make
 * again its `work` subdirectory (and, for a volatile mount, `incompat/volatile`) before the mount
 * returns. Freeing a directory's block on ext4 mounted with `discard` waits for the disk to
 * discard it: measured here as most of what an environment root added to `exec()`. An empty
 * directory of its own per sandbox needs none of that; its removal happens after the result,
 * where nobody waits for it. Each name carries the gateway's pid, so that a directory left by a
 * process that died is recognised and swept, and one in use by another live process is not.
 * @module
 */
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmdirSync,
  unlinkSync,
} from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { getLogger } from "@logtape/logtape";
import { runOffLoop } from "./off_loop.ts";
import type { RootIds } from "./rootfs.ts";

const log = getLogger(["coop", "sandbox"]);
const PREFIX = "w-";
let sequence = 0;
/** Tells this realm's directories from another's in the same process (as cgroup names do). */
const realm = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);

/**
 * Makes an empty work directory below `work` (0700, owned by the sandbox's root when `asRoot`
 * must chown it) and returns its path.
 */
export function freshWorkdir(work: string, ids: RootIds, asRoot: boolean): string {
  const path = join(work, `${PREFIX}${process.pid}-${realm}-${++sequence}`);
  mkdirSync(path, { mode: 0o700 });
  if (asRoot) chownSync(path, ids.uid, ids.gid);
  return path;
}

/** Removes `path` and everything below it; opens up directories the overlay made mode 000. */
export function removeWorkdir(path: string): void {
  let info;
  try {
    info = lstatSync(path);
  } catch {
    return;
  }
  if (!info.isDirectory()) return unlinkSync(path);
  if ((info.mode & 0o700) !== 0o700) chmodSync(path, 0o700);
  for (const name of readdirSync(path)) removeWorkdir(join(path, name));
  rmdirSync(path);
}

const removals = new Set<Promise<void>>();

/** Removes a sandbox's work directory on the off-loop worker once it has ended; logs a failure. */
export function discardWorkdir(path: string | null): void {
  if (path === null) return;
  const removal = runOffLoop<void>(new URL(import.meta.url), "removeWorkdir", [path]).catch(
    (error) =>
      log.warn("sandbox.workdir removal of {path} failed: {error}", {
        path,
        error: (error as Error).message,
      }),
  );
  removals.add(removal);
  removal.finally(() => removals.delete(removal));
}

/** Resolves once every removal asked for so far has finished (tests, the gateway's shutdown). */
export async function workdirRemovalsSettled(): Promise<void> {
  while (removals.size > 0) await Promise.allSettled([...removals]);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as { code?: string }).code === "EPERM";
  }
}

/**
 * Removes, in the background, what earlier sandboxes left below `work`: directories of
 * processes that are gone (a crash) and the single `work` directory of the layout before.
 */
export function sweepWorkdirs(work: string): void {
  let names: string[];
  try {
    names = readdirSync(work);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = name.startsWith(PREFIX) ? Number(name.slice(PREFIX.length).split("-")[0]) : NaN;
    const stale = name === "work" || (Number.isInteger(pid) && pid !== process.pid && !alive(pid));
    if (stale) discardWorkdir(join(work, name));
  }
}
