/**
 * Environment roots for sandbox tests: a base built from the mini rootfs and per-user upper
 * and work directories, owned by the host uid the sandbox's root maps to (the invoker, or the
 * dedicated uid when the tests run as root), under a directory that uid may search.
 * @module
 */
import { chmodSync, chownSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { DEFAULT_SANDBOX_HOST_ID } from "../../src/sandbox/host_ids.ts";
import { environmentWritesSettled, type RootfsPolicy } from "../../src/sandbox/mod.ts";
import { buildMiniRootfs, MINI_ROOTFS_PROGRAMS } from "../fixtures/mini_rootfs.ts";

/** Programs of the test base: the mini rootfs's and what the overlay tests call. */
export const BASE_PROGRAMS = [
  ...MINI_ROOTFS_PROGRAMS,
  ...["ln", "cp", "chmod", "stat", "mknod", "mount", "umount", "grep"],
];

/** The host uid the sandbox's root maps to in these tests. */
export const ROOT_UID = process.getuid?.() === 0 ? DEFAULT_SANDBOX_HOST_ID : process.getuid!();

function chownTree(path: string, uid: number): void {
  chownSync(path, uid, uid);
  if (!lstatSync(path).isDirectory()) return;
  for (const name of readdirSync(path)) {
    const child = join(path, name);
    if (lstatSync(child).isSymbolicLink()) continue;
    chownTree(child, uid);
  }
}

/** An overlay `rootfs`. */
export type OverlayRoot = Extract<RootfsPolicy, { upper: string }>;

/** One environment on disk: a base and the uppers of any number of users. */
export interface TestEnvironment {
  /** The directory holding everything (removed by `dispose`). */
  dir: string;
  /** The base (lower) directory. */
  base: string;
  /** `rootfs` for `user` over the base (or over the host's /usr with `"host"`). */
  rootfs(user: string, lower?: "host"): OverlayRoot;
  /** Removes everything. */
  dispose(): Promise<void>;
}

/**
 * Builds a base from the mini rootfs (with `BASE_PROGRAMS`) in a fresh directory, or uses
 * `base` (built by `sharedBase`) as it is.
 */
export async function testEnvironment(base?: string): Promise<TestEnvironment> {
  const dir = await Deno.makeTempDir({ prefix: "coop-env-" });
  // Searchable (not listable) by the sandbox's root, which is not the invoker when root runs.
  await Deno.chmod(dir, 0o711);
  const lower = base ?? buildBase(join(dir, "base"));
  return {
    dir,
    base: lower,
    rootfs: (user, kind) => ({
      lower: kind ?? lower,
      upper: join(dir, "uppers", user, "upper"),
      work: join(dir, "uppers", user, "work"),
    }),
    // What the library still does there in the background (the work-directory pool's refill
    // and removals, the upper's sync) must end first: a refill making a directory while the
    // tree goes fails the removal with ENOTEMPTY (CI run 4, O5).
    dispose: async () => {
      await environmentWritesSettled();
      await removeTree(dir);
    },
  };
}

function buildBase(base: string): string {
  buildMiniRootfs(base, BASE_PROGRAMS.filter((p) => hostHas(p)));
  if (process.getuid?.() === 0) chownTree(base, ROOT_UID);
  return base;
}

let shared: string | undefined;

/**
 * One base for every test of a file, built on first use (before anything else in the file
 * changes the process's environment, which `ldd` would see) and removed when it unloads.
 */
export function sharedBase(): string {
  if (shared) return shared;
  const dir = Deno.makeTempDirSync({ prefix: "coop-env-base-" });
  Deno.chmodSync(dir, 0o711);
  shared = buildBase(join(dir, "base"));
  globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
  return shared;
}

/**
 * Removes `path` recursively, first making every directory the invoker owns searchable and
 * writable: overlayfs leaves `work/work` with mode 000, which an unprivileged owner could not
 * empty otherwise. Symlinks are never followed.
 */
export async function removeTree(path: string): Promise<void> {
  const open = (dir: string) => {
    try {
      const info = lstatSync(dir);
      if (!info.isDirectory()) return;
      if (process.getuid?.() !== 0) chmodSync(dir, 0o700);
      for (const name of readdirSync(dir)) open(join(dir, name));
    } catch { /* gone or not ours: the removal below reports what matters */ }
  };
  open(path);
  await Deno.remove(path, { recursive: true });
}

/**
 * Throws when anything under `upper` could matter to the host: a set-id file, or a device
 * node other than overlayfs's whiteouts (character device 0:0). Nothing is followed or opened.
 */
export function assertUpperInert(upper: string): void {
  const walk = (path: string) => {
    const info = lstatSync(path);
    if (info.mode & 0o6000) throw new Error(`set-id file in the upper: ${path}`);
    if (info.isBlockDevice() || (info.isCharacterDevice() && info.rdev !== 0)) {
      throw new Error(`device node in the upper: ${path}`);
    }
    if (info.isDirectory()) { for (const name of readdirSync(path)) walk(join(path, name)); }
  };
  try {
    lstatSync(upper);
  } catch {
    return;
  }
  walk(upper);
}

function hostHas(program: string): boolean {
  return ["/usr/bin", "/bin", "/usr/sbin", "/sbin"].some((d) => {
    try {
      return Deno.statSync(`${d}/${program}`).isFile;
    } catch {
      return false;
    }
  });
}
