/**
 * A fresh overlayfs work directory for each sandbox of an environment: taken from a small pool
 * made ahead of need, removed after the sandbox ends once the process is idle, on the off-loop
 * worker.
 *
 * Mounting an overlay over a work directory it used before makes the kernel delete and make
 * again its `work` subdirectory (and, for a volatile mount, `incompat/volatile`) before the mount
 * returns. Freeing a directory's block on ext4 mounted with `discard` waits for the disk to
 * discard it: measured here as most of what an environment root added to `exec()`. An empty
 * directory of its own per sandbox needs none of that.
 *
 * Neither making nor removing one is on a command's path: each `work` keeps up to `POOL_SIZE`
 * empty directories made by the worker after a sandbox of it ended, and the directories of
 * ended sandboxes wait until no sandbox with an environment has run for `IDLE_MS` — their
 * removal is a discard per directory block, which would compete for the disk with the next
 * command — and then go in one batch. A busy gateway sends them with the pool's next refill,
 * one message for both, and never lets more than `REMOVAL_BATCH` wait: the one that makes the
 * batch full sends it at once, so a gateway that never idles still removes them.
 * Each name carries the gateway's pid, so that a directory left by a process that died (pooled
 * or used) is recognised and swept, and one in use by another live process is not.
 * @module
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  rmdirSync,
  unlinkSync,
} from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { setTimeout } from "node:timers";
import { getLogger } from "@logtape/logtape";
import { runOffLoop } from "./off_loop.ts";
import { processAlive } from "./process_alive.ts";
import type { RootIds } from "./rootfs.ts";

const log = getLogger(["coop", "sandbox"]);
const PREFIX = "w-";
let sequence = 0;
/** Tells this realm's directories from another's in the same process (as cgroup names do). */
const realm = crypto.getRandomValues(new Uint32Array(1))[0].toString(36);

/**
 * Empty work directories kept ready per `work` (and owner). Refilled in one worker call once at
 * most `POOL_LOW` are left: a call costs the event loop ≈ 0.15 ms of CPU whatever it does, as
 * much as making a directory twice, and the worker more (docs/performance.md, session 18), so
 * each refill makes several.
 */
export const POOL_SIZE = 12;
const POOL_LOW = 3;
/** At most this many `work` directories have a pool; the least recently used one's goes. */
const POOL_KEYS_MAX = 32;
/** Directories of ended sandboxes that may wait for an idle moment; one more sends them all. */
export const REMOVAL_BATCH = 16;
/** How long no sandbox with an environment must have run before the waiting ones are removed. */
export const IDLE_MS = 50;

/** A work directory's owner as `freshWorkdir` made it: the sandbox's root, chowned or not. */
interface Owner {
  work: string;
  ids: RootIds;
  asRoot: boolean;
}

/** Ready directories per pool key (`work`, owner), least recently used first. */
const pools = new Map<string, string[]>();
/** Pool keys with a refill on the worker. */
const refilling = new Set<string>();
/** What each directory handed out (and not yet discarded) needs for the next refill. */
const handedOut = new Map<string, Owner>();
/** Directories waiting for removal, not yet sent to the worker. */
let waiting: string[] = [];
let idleTimer: ReturnType<typeof setTimeout> | null = null;
/** Removals and refills on the worker. */
const inFlight = new Set<Promise<void>>();

function poolKey(owner: Owner): string {
  return `${owner.work}\n${owner.ids.uid}:${owner.ids.gid}:${owner.asRoot}`;
}

function nextName(work: string): string {
  return join(work, `${PREFIX}${process.pid}-${realm}-${++sequence}`);
}

/** Makes an empty work directory at `path` (0700, chowned to `uid`/`gid` when `asRoot`). */
export function makeWorkdir(path: string, uid: number, gid: number, asRoot: boolean): void {
  mkdirSync(path, { mode: 0o700 });
  if (asRoot) chownSync(path, uid, gid);
}

/** Makes each of `paths` on the worker; returns those it made (a failure ends the list). */
export function makeWorkdirs(paths: string[], uid: number, gid: number, asRoot: boolean): string[] {
  const made: string[] = [];
  for (const path of paths) {
    try {
      makeWorkdir(path, uid, gid, asRoot);
    } catch {
      break;
    }
    made.push(path);
  }
  return made;
}

/**
 * A pooled directory of `owner` that is still there; null when none is. Being there is enough:
 * no sandbox sees `work`, and prepareRootfs checks before each sandbox that `work` is still the
 * directory it made or checked, so what is there under a name this process chose is what the
 * worker made (an `existsSync`, ≈ 1 µs, where a stat builds a whole `Stats`).
 */
function takePooled(owner: Owner): string | null {
  const pool = pools.get(poolKey(owner));
  for (let path = pool?.shift(); path !== undefined; path = pool!.shift()) {
    if (existsSync(path)) return path;
    // else removed with its environment (`coop sandbox reset`)
  }
  return null;
}

/**
 * An empty work directory below `work` for one sandbox (0700, owned by the sandbox's root:
 * chowned when `asRoot`), from the pool when it has one, else made now.
 */
export function freshWorkdir(work: string, ids: RootIds, asRoot: boolean): string {
  const owner = { work, ids, asRoot };
  let path = takePooled(owner);
  if (path === null) {
    path = nextName(work);
    makeWorkdir(path, ids.uid, ids.gid, asRoot);
  }
  handedOut.set(path, owner);
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = null;
  return path;
}

function track(task: Promise<void>): void {
  inFlight.add(task);
  task.finally(() => inFlight.delete(task));
}

/** Fills `owner`'s pool up to POOL_SIZE on the worker when it runs low (one refill at a time). */
function refill(owner: Owner): void {
  const key = poolKey(owner);
  const pool = pools.get(key) ?? [];
  pools.delete(key); // re-inserted last: the most recently used
  pools.set(key, pool);
  while (pools.size > POOL_KEYS_MAX) {
    const [oldest, dirs] = pools.entries().next().value!;
    pools.delete(oldest);
    for (const dir of dirs) discard(dir);
  }
  if (refilling.has(key) || pool.length > POOL_LOW) return;
  refilling.add(key);
  const names = Array.from({ length: POOL_SIZE - pool.length }, () => nextName(owner.work));
  const { uid, gid } = owner.ids;
  // What waits for removal goes along: the worker is woken once for both.
  const removals = takeWaiting();
  track(
    runOffLoop<[string[], [string, string][]]>(new URL(import.meta.url), "renewWorkdirs", [
      removals,
      names,
      uid,
      gid,
      owner.asRoot,
    ]).then(([made, failures]) => {
      logRemovalFailures(failures);
      // Dropped while it ran (the pool's key evicted, or `workdirRemovalsSettled`): removed.
      if (pools.get(key) === pool) pool.push(...made);
      else for (const dir of made) discard(dir);
    }, (error) => {
      removals.forEach((path) => logRemovalFailure(path, (error as Error).message));
      log.debug("sandbox.workdir pool refill failed: {error}", { error });
    }).finally(() => refilling.delete(key)),
  );
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

/** `removeWorkdir` of each of `paths` on the worker; returns the failures as [path, message]. */
export function removeWorkdirs(paths: string[]): [string, string][] {
  const failures: [string, string][] = [];
  for (const path of paths) {
    try {
      removeWorkdir(path);
    } catch (error) {
      failures.push([path, (error as Error).message]);
    }
  }
  return failures;
}

/**
 * On the worker: removes `remove` (as `removeWorkdirs`), then makes `make` (as `makeWorkdirs`);
 * returns what it made and the removals that failed.
 */
export function renewWorkdirs(
  remove: string[],
  make: string[],
  uid: number,
  gid: number,
  asRoot: boolean,
): [string[], [string, string][]] {
  const failures = removeWorkdirs(remove);
  return [makeWorkdirs(make, uid, gid, asRoot), failures];
}

/** The directories waiting for removal, now no longer waiting (the idle timer is stopped). */
function takeWaiting(): string[] {
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = null;
  const batch = waiting;
  waiting = [];
  return batch;
}

/** Sends every waiting directory to the worker for removal, in one batch. */
function removeWaiting(): void {
  const batch = takeWaiting();
  if (batch.length === 0) return;
  track(
    runOffLoop<[string, string][]>(new URL(import.meta.url), "removeWorkdirs", [batch]).then(
      logRemovalFailures,
      (error) => batch.forEach((path) => logRemovalFailure(path, (error as Error).message)),
    ),
  );
}

function logRemovalFailure(path: string, error: string): void {
  log.warn("sandbox.workdir removal of {path} failed: {error}", { path, error });
}

function logRemovalFailures(failures: [string, string][]): void {
  for (const [path, error] of failures) logRemovalFailure(path, error);
}

/** Queues `path` for removal: at once when REMOVAL_BATCH wait, else once the process idles. */
function discard(path: string): void {
  waiting.push(path);
  if (waiting.length >= REMOVAL_BATCH) return removeWaiting();
  if (handedOut.size > 0 || idleTimer) return;
  idleTimer = setTimeout(removeWaiting, IDLE_MS);
  // A process that exits before it fires leaves them to the next one's sweep (the pid is gone).
  idleTimer.unref();
}

/**
 * A sandbox's work directory after it ended: removed (soon, off the event loop; a failure is
 * logged), and its pool made full again for the next sandbox.
 */
export function discardWorkdir(path: string | null): void {
  if (path === null) return;
  const owner = handedOut.get(path);
  handedOut.delete(path);
  discard(path);
  if (owner) refill(owner);
}

/**
 * Resolves once every work directory this process made is gone — those of ended sandboxes and
 * the pooled ones (the next sandbox makes its pool again) — and no refill is running: what
 * tests and a process about to exit await.
 */
export async function workdirRemovalsSettled(): Promise<void> {
  while (true) {
    for (const pool of pools.values()) pool.splice(0).forEach((path) => waiting.push(path));
    pools.clear();
    removeWaiting();
    if (inFlight.size === 0) return;
    await Promise.allSettled([...inFlight]);
  }
}

/** How many directories wait for removal without having been sent to the worker (tests). */
export function workdirsWaiting(): number {
  return waiting.length;
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
    const stale = name === "work" ||
      (Number.isInteger(pid) && pid !== process.pid && !processAlive(pid));
    if (stale) discard(join(work, name));
  }
}
