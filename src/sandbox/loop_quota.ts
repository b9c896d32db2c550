/**
 * Hard disk and inode quotas for a root gateway: the workspace becomes the mount point of its
 * own ext4 file system in a sparse image file of the quota's size, made with the inode quota
 * (`mkfs.ext4 -N`), mounted `nodev,nosuid` on the host. The kernel then answers ENOSPC at the
 * quota, whatever a command does. Measured on the development host: mkfs 33 ms, mount 29 ms,
 * once per workspace; project quotas were not available (docs/limits.md).
 *
 * Only an empty workspace is converted (nothing to migrate, nothing lost); one that already
 * holds files, or a host without root, mkfs.ext4 or loop devices, keeps the accounting path.
 * The image lives beside the workspace, `.<name>.coop-quota.img`, outside every sandbox's view.
 * @module
 */
import {
  closeSync,
  ftruncateSync,
  lstatSync,
  openSync,
  readFileSync,
  rmSync,
  type Stats,
} from "node:fs";
import { basename, dirname } from "node:path";
import process from "node:process";
import { listDirBounded } from "./dir_list.ts";
import { ERRNO, isNotFound } from "./errno.ts";
import { cString, loadTrampoline, type Trampoline } from "./ffi.ts";
import { runHostProgram } from "./host_program.ts";

/** Runs a host program (injectable for tests); rejects with ENOENT (`isNotFound`) when missing. */
export type RunProgram = (
  program: string,
  args: string[],
) => Promise<{ code: number; stderr: string }>;

/** The image file of `workspace`'s hard quota. */
export function quotaImagePath(workspace: string): string {
  return `${dirname(workspace)}/.${basename(workspace)}.coop-quota.img`;
}

/** Mount points of the host, unescaped, from /proc/self/mountinfo. */
function mountPoints(): Set<string> {
  const points = new Set<string>();
  const text = readFileSync("/proc/self/mountinfo", "utf8");
  for (const line of text.split("\n")) {
    const field = line.split(" ")[4];
    if (field) {
      points.add(field.replace(/\\(\d{3})/g, (_, o) => String.fromCharCode(parseInt(o, 8))));
    }
  }
  return points;
}

/**
 * Whether `workspace` is a mount point: statx's mount-root attribute (a few microseconds, on
 * every command), or on kernels before 5.8, which do not report it, /proc/self/mountinfo.
 */
function isMountPoint(lib: Trampoline, workspace: string): boolean {
  const root = lib.coop_mount_root(cString(workspace));
  if (root === -ERRNO.ENOSYS) return mountPoints().has(workspace);
  return root === 1; // an error (ENOENT …) is reported by the lstat that follows
}

/** Whether the directory holds anything, from one small bounded read (never the whole list). */
function holdsEntries(lib: Trampoline, dir: string): boolean {
  const listed = listDirBounded(lib, dir, new Uint8Array(1024));
  return listed === "too-large" || listed.length > 0;
}

/** The outcome: the hard quota in force, or why the accounting path applies instead. */
export type LoopQuotaOutcome = { image: string } | { reason: string };

let serial: Promise<unknown> = Promise.resolve();

/**
 * Makes sure `workspace` is the mount point of its quota image (root only); never throws for a
 * host that cannot, it answers why. Calls are serialized: two commands of one workspace must
 * not both make its image.
 */
export function ensureLoopQuota(
  workspace: string,
  quotaBytes: number,
  inodeQuota: number | undefined,
  run: RunProgram = runHostProgram,
): Promise<LoopQuotaOutcome> {
  const next = serial.then(() => ensure(workspace, quotaBytes, inodeQuota, run));
  serial = next.catch(() => {});
  return next;
}

async function ensure(
  workspace: string,
  quotaBytes: number,
  inodeQuota: number | undefined,
  run: RunProgram,
): Promise<LoopQuotaOutcome> {
  if ((process.getuid?.() ?? -1) !== 0) {
    return { reason: "hard quotas need root (a loop-mounted image)" };
  }
  const lib = await loadTrampoline();
  const image = quotaImagePath(workspace);
  if (isMountPoint(lib, workspace)) {
    // Ours if its image is there; anything else mounted on a workspace is the owner's choice.
    return exists(image) ? { image } : { reason: `${workspace} is a mount point of its own` };
  }
  let stat: Stats;
  try {
    stat = lstatSync(workspace);
  } catch {
    return { reason: `${workspace} does not exist` };
  }
  if (!stat.isDirectory()) return { reason: `${workspace} is not a directory` };
  if (!exists(image)) {
    if (holdsEntries(lib, workspace)) {
      return {
        reason: `${workspace} already holds files: only an empty workspace gets a quota image`,
      };
    }
    const made = await makeImage(image, quotaBytes, inodeQuota, stat, run);
    if (made) return { reason: made };
  }
  const mounted = await runQuietly(run, "mount", [
    "-t",
    "ext4",
    "-o",
    "loop,nodev,nosuid",
    image,
    workspace,
  ]);
  return mounted ? { reason: `mount ${image}: ${mounted}` } : { image };
}

async function makeImage(
  image: string,
  quotaBytes: number,
  inodeQuota: number | undefined,
  owner: Stats,
  run: RunProgram,
): Promise<string | null> {
  // Sparse: the image costs the host only what the workspace holds, at most the quota.
  const fd = openSync(image, "wx", 0o600);
  try {
    ftruncateSync(fd, quotaBytes);
  } finally {
    closeSync(fd);
  }
  const args = ["-q", "-F", "-m", "0", "-E", `root_owner=${owner.uid}:${owner.gid}`];
  if (inodeQuota !== undefined) args.push("-N", String(inodeQuota));
  const failed = await runQuietly(run, "mkfs.ext4", [...args, image]);
  if (failed) {
    rmSync(image);
    return `mkfs.ext4: ${failed}`;
  }
  return null;
}

/** Runs a program; returns null on success, else what went wrong. */
async function runQuietly(run: RunProgram, program: string, args: string[]) {
  try {
    const out = await run(program, args);
    return out.code === 0 ? null : out.stderr || `exit ${out.code}`;
  } catch (error) {
    return isNotFound(error) ? `${program} is not installed` : String(error);
  }
}

function exists(path: string): boolean {
  // Without an exception for the usual answer (no image): throwing one costs ~40 µs here.
  return lstatSync(path, { throwIfNoEntry: false }) !== undefined;
}

/** Unmounts a workspace's quota image and deletes it (its files go with it). For tests and probes. */
export async function releaseLoopQuota(
  workspace: string,
  run: RunProgram = runHostProgram,
): Promise<void> {
  if (mountPoints().has(workspace)) await runQuietly(run, "umount", [workspace]);
  try {
    rmSync(quotaImagePath(workspace));
  } catch {
    // none
  }
}
