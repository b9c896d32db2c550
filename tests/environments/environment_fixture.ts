/**
 * Test helpers for environments: a base "built" by writing its manifest (and, optionally, a
 * root file system) the way `coop init` leaves it.
 * @module
 */
import fs from "node:fs";
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
