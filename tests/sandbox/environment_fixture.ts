/**
 * Environment roots for sandbox tests: a base built from the mini rootfs and per-user upper
 * and work directories, owned by the host uid the sandbox's root maps to (the invoker, or the
 * dedicated uid when the tests run as root), under a directory that uid may search.
 * @module
 */
import { chownSync, lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { DEFAULT_SANDBOX_HOST_ID } from "../../src/sandbox/host_ids.ts";
import type { RootfsPolicy } from "../../src/sandbox/mod.ts";
import { buildMiniRootfs, MINI_ROOTFS_PROGRAMS } from "../fixtures/mini_rootfs.ts";

/** Programs of the test base: the mini rootfs's and what the overlay tests call. */
export const BASE_PROGRAMS = [...MINI_ROOTFS_PROGRAMS, "ln", "stat", "mknod", "mount", "grep"];

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

/** Builds a base from the mini rootfs (with `BASE_PROGRAMS`) in a fresh directory. */
export async function testEnvironment(): Promise<TestEnvironment> {
  const dir = await Deno.makeTempDir({ prefix: "coop-env-" });
  // Searchable (not listable) by the sandbox's root, which is not the invoker when root runs.
  await Deno.chmod(dir, 0o711);
  const base = join(dir, "base");
  buildMiniRootfs(base, BASE_PROGRAMS.filter((p) => hostHas(p)));
  if (process.getuid?.() === 0) chownTree(base, ROOT_UID);
  return {
    dir,
    base,
    rootfs: (user, lower) => ({
      lower: lower ?? base,
      upper: join(dir, "uppers", user, "upper"),
      work: join(dir, "uppers", user, "work"),
    }),
    dispose: () => Deno.remove(dir, { recursive: true }).catch(() => {}),
  };
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
