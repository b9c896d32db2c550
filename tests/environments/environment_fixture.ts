/**
 * Test helpers for environments: a base "built" by writing its manifest (and, optionally, a
 * root file system) the way `coop init` leaves it.
 * @module
 */
import fs from "node:fs";
import { join } from "node:path";
import process from "node:process";
import { DEFAULT_SANDBOX_HOST_ID } from "../../src/sandbox/host_ids.ts";
import { buildMiniRootfs, MINI_ROOTFS_PROGRAMS } from "../fixtures/mini_rootfs.ts";
import { coopfileHash } from "../../src/config/coopfile_hash.ts";
import { loadCoopfile } from "../../src/config/coopfile_load.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";

/** Writes `base/manifest.json` for `coopfile` (its current hash) under `stateDir`. */
export function writeBuiltManifest(stateDir: string, coopfile: string): void {
  const resolved = loadCoopfile({ project: coopfile, global: null });
  const paths = environmentPaths(stateDir, coopfile);
  fs.mkdirSync(paths.rootfs, { recursive: true, mode: 0o700 });
  fs.writeFileSync(
    paths.manifest,
    JSON.stringify({
      sources: [...resolved.sources],
      image: resolved.base.kind === "debian" ? `debian:${resolved.base.suite}` : resolved.base.kind,
      packages: [...resolved.packages],
      setup: [...resolved.setup],
      hash: coopfileHash(resolved),
      builtAt: "2026-11-24T10:00:00.000Z",
      sizeBytes: 4096,
    }),
  );
}

/** The host uid the sandbox's root maps to in these tests (the dedicated one under root). */
export const SANDBOX_ROOT_UID = process.getuid?.() === 0
  ? DEFAULT_SANDBOX_HOST_ID
  : process.getuid!();

function chownTree(path: string, uid: number): void {
  fs.lchownSync(path, uid, uid);
  if (!fs.lstatSync(path).isDirectory()) return;
  for (const name of fs.readdirSync(path)) chownTree(join(path, name), uid);
}

/**
 * "Builds" the base of `coopfile` as `coop init` leaves it: the mini rootfs (host programs
 * and their libraries) as `base/rootfs`, owned by the sandbox's root, and the manifest.
 */
export function buildTestBase(stateDir: string, coopfile: string, programs: string[] = []): void {
  const paths = environmentPaths(stateDir, coopfile);
  buildMiniRootfs(paths.rootfs, [...MINI_ROOTFS_PROGRAMS, ...programs]);
  if (process.getuid?.() === 0) chownTree(paths.rootfs, SANDBOX_ROOT_UID);
  writeBuiltManifest(stateDir, coopfile);
}
