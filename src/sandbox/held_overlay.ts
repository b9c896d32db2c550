/**
 * One overlay mount per environment upper, held by this process between its sandboxes and
 * cloned into each new one, instead of a new overlay per command.
 *
 * Mounting an overlay is the largest part of what an environment root adds to `exec()`: the
 * kernel sets up its work directory on disk (`FSCONFIG_CMD_CREATE`), every path the command
 * opens is looked up through layers no cache has seen yet, and the mount is torn down when the
 * sandbox ends. The first sandbox of an upper mounts it as before and its init sends the mount
 * back to the gateway, still detached (ffi/init/rootfs.c, `send_overlay_back`): it is in no
 * mount tree of the host, and only an init can clone it into its sandbox (Linux 6.15 and later
 * allow cloning out of a detached mount; on older kernels the init sends nothing and every
 * sandbox mounts its own, as before). One superblock per upper is what overlayfs asks for.
 *
 * A held overlay is given only to a sandbox that holds the upper's lock, and only while nothing
 * but this process's sandboxes took that lock since it was made (`lockUpper`'s `changedHands`:
 * `coop sandbox reset`, `coop run` or `coop shell` in another process, a layer removed here), its
 * lower and upper are the same directories, it is younger than `MAX_AGE_MS` — a lower that
 * changes under a mounted overlay (the host's `/usr`, upgraded) is not seen reliably — and the
 * sandbox before that used it did not fail to set up. It is dropped after `IDLE_MS` unused.
 * @module
 */
import { statSync } from "node:fs";
import { setTimeout } from "node:timers";
import type { Trampoline } from "./ffi.ts";
import { discardWorkdir, freshWorkdir } from "./overlay_workdir.ts";

/** The host ids the sandbox's root maps to, and whether the invoker is root (chowning). */
type OverlayIds = { uid: number; gid: number; idmapped: boolean };

/** A held overlay unused this long is dropped. */
export const IDLE_MS = 30_000;
/** A held overlay older than this is not given out again (the lower may have changed). */
export const MAX_AGE_MS = 60_000;
/** At most this many uppers' overlays are held; the least recently used goes. */
const HELD_MAX = 16;

interface Held {
  lib: Trampoline;
  fd: number;
  workdir: string;
  identity: string;
  createdAt: number;
  inUse: boolean;
  idle: ReturnType<typeof setTimeout> | null;
}

/** Held overlays by upper, least recently used first. */
const held = new Map<string, Held>();
let holding = true;

/** What the spec and `coop_start` of an overlay-root sandbox carry. */
export interface OverlayMount {
  /** The held overlay's fd for the init to clone (`PARAM.held`), or -1 for a fresh mount. */
  heldFd: number;
  /** The work directory the spec names: the held overlay's, or this sandbox's fresh one. */
  workdir: string;
  /** A fresh mount whose init is asked to send it back to be held (`TAG.hold`). */
  hold: boolean;
  /**
   * Once the init is reaped (`go`: its socket, still open; null when it never got its spec):
   * keeps what it sent back, or lets the held one be given out again — unless setup failed,
   * which drops it.
   */
  settle(go: number | null, setupFailed: boolean): void;
  /** The sandbox never started: its fresh work directory goes, a held overlay stays. */
  abandon(): void;
}

/** Device and inode of `path`, or "gone". */
function inode(path: string): string {
  try {
    const info = statSync(path);
    return `${info.dev}:${info.ino}`;
  } catch {
    return "gone";
  }
}

function drop(upper: string, entry: Held): void {
  if (held.get(upper) === entry) held.delete(upper);
  if (entry.idle) clearTimeout(entry.idle);
  entry.lib.coop_close(entry.fd);
  // The superblock goes with its last mount; its work directory is then an ended sandbox's.
  discardWorkdir(entry.workdir);
}

function idleLater(upper: string, entry: Held): void {
  entry.inUse = false;
  entry.idle = setTimeout(() => drop(upper, entry), IDLE_MS);
  entry.idle.unref();
}

function keep(lib: Trampoline, upper: string, fd: number, workdir: string, identity: string) {
  const old = held.get(upper);
  if (old) drop(upper, old);
  if (held.size >= HELD_MAX) {
    for (const [key, entry] of held) {
      if (!entry.inUse) {
        drop(key, entry);
        break;
      }
    }
  }
  const entry: Held = {
    lib,
    fd,
    workdir,
    identity,
    createdAt: performance.now(),
    inUse: false,
    idle: null,
  };
  held.set(upper, entry);
  idleLater(upper, entry);
}

/**
 * The overlay of a sandbox with `lower` (a host path; the host's `/usr` for "host") under
 * `upper` and `work`, for a root of `ids`: the held one when it may be given out, else a fresh
 * work directory. Call with the upper's lock held; `changedHands` from `lockUpper`.
 */
export function overlayMount(
  lib: Trampoline,
  rootfs: { lower: string; upper: string; work: string },
  ids: OverlayIds,
  changedHands: boolean,
): OverlayMount {
  const { upper, work } = rootfs;
  const identity = JSON.stringify([
    rootfs.lower,
    inode(rootfs.lower),
    inode(upper),
    work,
    ids.uid,
    ids.gid,
    ids.idmapped,
  ]);
  const found = held.get(upper);
  if (found && !found.inUse) {
    const stale = changedHands || found.identity !== identity ||
      performance.now() - found.createdAt > MAX_AGE_MS;
    if (stale) drop(upper, found);
    else {
      found.inUse = true;
      if (found.idle) clearTimeout(found.idle);
      found.idle = null;
      held.delete(upper); // most recently used last
      held.set(upper, found);
      return {
        heldFd: found.fd,
        workdir: found.workdir,
        hold: false,
        settle: (_go, setupFailed) => setupFailed ? drop(upper, found) : idleLater(upper, found),
        abandon: () => idleLater(upper, found),
      };
    }
  }
  const workdir = freshWorkdir(work, ids, ids.idmapped);
  return {
    heldFd: -1,
    workdir,
    hold: holding,
    settle(go, setupFailed) {
      const fd = holding && go !== null ? lib.coop_recv_held(go) : -1;
      if (fd >= 0 && !setupFailed) keep(lib, upper, fd, workdir, identity);
      else {
        if (fd >= 0) lib.coop_close(fd);
        discardWorkdir(workdir);
      }
    },
    abandon: () => discardWorkdir(workdir),
  };
}

/** Drops every held overlay not in use now (tests; `false` also stops holding new ones). */
export function dropHeldOverlays(keepHolding = true): void {
  holding = keepHolding;
  for (const [upper, entry] of [...held]) if (!entry.inUse) drop(upper, entry);
}

/** How many overlays this process holds (tests, `coop sandbox status`). */
export function heldOverlayCount(): number {
  return held.size;
}
