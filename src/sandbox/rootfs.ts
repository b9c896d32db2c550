/**
 * Prepares an environment's directories on the host before its sandbox starts: the upper and
 * work directories and the persist sources are made (0700, owned by the host uid the
 * sandbox's root maps to) and checked — no symlink on their path, upper and work on one file
 * system, every directory on the way searchable by that uid. The host never opens a file in
 * an upper beyond this (docs/environments_overlay.md).
 * @module
 */
import {
  chmodSync,
  chownSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  type Stats,
  statSync,
} from "node:fs";
import { join } from "node:path";
import { SandboxPolicyError } from "./errors.ts";
import { sweepWorkdirs } from "./overlay_workdir.ts";
import type { SandboxPolicy } from "./policy.ts";

/** Host ids of the sandbox's root: its files on disk belong to them. */
export interface RootIds {
  uid: number;
  gid: number;
}

/** Where the host's `/usr` is overlaid in a sandbox with `rootfs.lower = "host"`. */
export const HOST_LOWER_DIR = "/usr";

function lstatOrNull(path: string): Stats | null {
  try {
    return lstatSync(path);
  } catch {
    return null;
  }
}

/** Whether `ids` may search (x) directory `info`, by its mode bits alone. */
function searchable(info: Stats, ids: RootIds): boolean {
  if (ids.uid === 0) return true;
  if (info.uid === ids.uid) return (info.mode & 0o100) !== 0;
  if (info.gid === ids.gid) return (info.mode & 0o010) !== 0;
  return (info.mode & 0o001) !== 0;
}

/**
 * Makes `path` (and missing parents) a directory the sandbox's root owns, refusing a symlink
 * anywhere on it; `key` names the policy field in errors.
 */
function ownedDirectory(key: string, path: string, ids: RootIds, asRoot: boolean): void {
  let current = "";
  for (const part of path.split("/").filter(Boolean)) {
    current += `/${part}`;
    const last = current === path.replace(/\/+$/, "");
    let info = lstatOrNull(current);
    if (info?.isSymbolicLink()) {
      throw new SandboxPolicyError(
        `${key}: "${path}" holds a symlink at "${current}"; give a path without symlinks`,
      );
    }
    if (!info) {
      mkdirSync(current, { mode: 0o700 });
      if (asRoot) chownSync(current, ids.uid, ids.gid);
      info = lstatSync(current);
    }
    if (!info.isDirectory()) {
      throw new SandboxPolicyError(`${key}: "${current}" is not a directory`);
    }
    if (last && info.uid !== ids.uid) {
      throw new SandboxPolicyError(
        `${key}: "${path}" belongs to uid ${info.uid}, not to the sandbox's root (host uid ` +
          `${ids.uid}), which could not write it; remove it or chown it to ${ids.uid}`,
      );
    }
    if (!last && !searchable(info, ids)) {
      throw new SandboxPolicyError(
        `${key}: the sandbox's root (host uid ${ids.uid}) cannot search "${current}" ` +
          `(mode ${(info.mode & 0o777).toString(8)}, owner ${info.uid}); ` +
          `keep environments under a directory it may enter`,
      );
    }
  }
}

/** Checks that `path` is a directory every component of which `ids` may search. */
function reachableDirectory(key: string, path: string, ids: RootIds): void {
  let current = "";
  for (const part of ["", ...path.split("/").filter(Boolean)]) {
    current = part ? `${current}/${part}` : "/";
    let info: Stats;
    try {
      info = statSync(current);
    } catch (error) {
      throw new SandboxPolicyError(`${key}: "${path}": ${(error as Error).message}`);
    }
    if (!info.isDirectory()) {
      throw new SandboxPolicyError(`${key}: "${current}" is not a directory`);
    }
    if (!searchable(info, ids)) {
      throw new SandboxPolicyError(
        `${key}: the sandbox's root (host uid ${ids.uid}) cannot search "${current}" ` +
          `(mode ${(info.mode & 0o777).toString(8)}, owner ${info.uid})`,
      );
    }
  }
}

/**
 * The host's /usr/local directories, made again in a new upper: a directory the host's root
 * owns has no owner the sandbox maps, so overlayfs could not copy it up to add a file to it;
 * one that already exists in the upper takes new files directly (`pip install`, `npm -g`).
 */
function mirrorHostDirectories(from: string, to: string, ids: RootIds, asRoot: boolean) {
  for (const entry of readdirSync(from, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const target = join(to, entry.name);
    if (lstatOrNull(target)) continue;
    const mode = lstatSync(join(from, entry.name)).mode & 0o7777 & ~0o7000;
    mkdirSync(target, { mode });
    if (asRoot) chownSync(target, ids.uid, ids.gid);
    mirrorHostDirectories(join(from, entry.name), target, ids, asRoot);
  }
}

/**
 * The directories a past `prepareRootfs` made and checked, by what it was asked, with the
 * identity (device, inode, owner) each had then. Walking every component of every path again
 * costs ≈ 0.2 ms of the event loop per command (about 30 lstat calls); a user's next command
 * asks the same, so one lstat per directory proves nothing changed below the parents, which
 * lie in the owner's own state directory. A directory removed (`coop sandbox reset`) or
 * replaced makes the full walk run again. Bounded: the oldest entry goes past `CHECKED_MAX`.
 */
const checked = new Map<string, string>();
const CHECKED_MAX = 256;

/** Device, inode and owner of each of `paths` (no symlink followed); null if one is missing. */
function identities(paths: readonly string[]): string | null {
  const parts: string[] = [];
  for (const path of paths) {
    const info = lstatOrNull(path);
    if (!info?.isDirectory()) return null;
    parts.push(`${info.dev}:${info.ino}:${info.uid}`);
  }
  return parts.join(",");
}

/** The directories `prepareRootfs` makes or checks for `policy`: looked at again on every call. */
function preparedPaths(policy: SandboxPolicy): string[] {
  const rootfs = policy.rootfs;
  const paths: string[] = [];
  if (rootfs && "directory" in rootfs) paths.push(rootfs.directory);
  else if (rootfs) {
    paths.push(rootfs.upper, rootfs.work);
    paths.push(rootfs.lower === "host" ? join(rootfs.upper, HOST_LOWER_DIR) : rootfs.lower);
  }
  for (const bind of policy.persist) paths.push(bind.source);
  return paths;
}

/**
 * Makes and checks the environment directories of `policy` for a sandbox whose root is
 * `ids` on the host (`asRoot`: the invoker is root and must chown what it makes).
 */
export function prepareRootfs(policy: SandboxPolicy, ids: RootIds, asRoot: boolean): void {
  if (!policy.rootfs && policy.persist.length === 0) return;
  const key = JSON.stringify([policy.rootfs, policy.persist.map((b) => b.source), ids, asRoot]);
  const paths = preparedPaths(policy);
  const seen = checked.get(key);
  if (seen !== undefined && seen === identities(paths)) return;
  checked.delete(key);
  walkRootfs(policy, ids, asRoot);
  if (policy.rootfs && "work" in policy.rootfs) sweepWorkdirs(policy.rootfs.work);
  const now = identities(paths);
  if (now === null) return;
  if (checked.size >= CHECKED_MAX) checked.delete(checked.keys().next().value!);
  checked.set(key, now);
}

/** What `prepareRootfs` does when it has not seen these directories as they are. */
function walkRootfs(policy: SandboxPolicy, ids: RootIds, asRoot: boolean): void {
  const rootfs = policy.rootfs;
  if (rootfs && "directory" in rootfs) {
    reachableDirectory("rootfs.directory", rootfs.directory, ids);
  } else if (rootfs) {
    if (rootfs.lower !== "host") reachableDirectory("rootfs.lower", rootfs.lower, ids);
    ownedDirectory("rootfs.upper", rootfs.upper, ids, asRoot);
    ownedDirectory("rootfs.work", rootfs.work, ids, asRoot);
    if (statSync(rootfs.upper).dev !== statSync(rootfs.work).dev) {
      throw new SandboxPolicyError(
        `rootfs.work: "${rootfs.work}" is not on the file system of rootfs.upper ` +
          `"${rootfs.upper}"; overlayfs needs both on one`,
      );
    }
    if (rootfs.lower === "host") {
      const usr = join(rootfs.upper, HOST_LOWER_DIR);
      if (!lstatOrNull(usr)) {
        // 0755 like the host's: an upper directory's mode is the merged directory's.
        for (const dir of [usr, join(usr, "local")]) {
          ownedDirectory("rootfs.upper", dir, ids, asRoot);
          chmodSync(dir, 0o755);
        }
        mirrorHostDirectories("/usr/local", join(usr, "local"), ids, asRoot);
      } else ownedDirectory("rootfs.upper", usr, ids, asRoot);
    }
  }
  for (const [i, bind] of policy.persist.entries()) {
    ownedDirectory(`persist.${i}.source`, bind.source, ids, asRoot);
  }
}
