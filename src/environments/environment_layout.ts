/**
 * Where an environment lives in Coop's state directory. One environment per Coopfile path:
 *
 * ```
 * <state_dir>/environments/<id>/
 *   base/rootfs/          the immutable base layer (read-only lower of every overlay)
 *   base/manifest.json    BaseManifest
 *   base.next/            a build in progress; renamed over base/ only when it succeeds
 *   uppers/<user>/upper   that user's writable layer (overlay upperdir)
 *   uppers/<user>/work    overlayfs's workdir for it (same filesystem as upper)
 *   persist/<user>/<n>    `[session] persist` directory number n of that user
 * ```
 * @module
 */
import { createHash } from "node:crypto";
import { basename, join } from "node:path";

/** What `coop init` recorded about a base layer. */
export interface BaseManifest {
  /** The Coopfile(s) it was built from, absolute paths. */
  sources: string[];
  /** `[base] image` as written, e.g. `debian:bookworm`, `oci:/srv/img.tar`, `host`. */
  image: string;
  /** Packages installed. */
  packages: string[];
  /** Setup and agent-install commands run. */
  setup: string[];
  /** sha256 of the resolved Coopfile the base was built from (hex). */
  hash: string;
  /** When the build finished, ISO 8601. */
  builtAt: string;
  /** Bytes under `rootfs/`. */
  sizeBytes: number;
}

/** The paths of one environment. */
export interface EnvironmentPaths {
  /** Its stable id: the Coopfile's name and a hash of its absolute path. */
  id: string;
  /** `<state_dir>/environments/<id>`. */
  root: string;
  /** The finished base layer. */
  base: string;
  /** The base's root file system (the overlay's lower directory). */
  rootfs: string;
  /** The base's manifest. */
  manifest: string;
  /** Where a build in progress writes. */
  next: string;
  /** A user's upper and overlay work directories. */
  upper(user: string): { upper: string; work: string };
  /** A user's directory for persist entry `index`. */
  persist(user: string, index: number): string;
}

/** The id of the environment built from `coopfilePath` (absolute). */
export function environmentId(coopfilePath: string): string {
  const name = basename(coopfilePath).toLowerCase().replace(/[^a-z0-9]+/g, "-")
    .replace(/^-|-$/g, "") || "coopfile";
  const digest = createHash("sha256").update(coopfilePath).digest("hex").slice(0, 12);
  return `${name}-${digest}`;
}

/** The paths of the environment built from `coopfilePath` under `stateDir`. */
export function environmentPaths(stateDir: string, coopfilePath: string): EnvironmentPaths {
  const id = environmentId(coopfilePath);
  const root = join(stateDir, "environments", id);
  const base = join(root, "base");
  return {
    id,
    root,
    base,
    rootfs: join(base, "rootfs"),
    manifest: join(base, "manifest.json"),
    next: join(root, "base.next"),
    upper: (user) => ({
      upper: join(root, "uppers", user, "upper"),
      work: join(root, "uppers", user, "work"),
    }),
    persist: (user, index) => join(root, "persist", user, String(index)),
  };
}
