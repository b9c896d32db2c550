/**
 * An environment as it stands: its Coopfile loaded, where it lives, and whether its base is
 * built (and from this very Coopfile, or an older one).
 * @module
 */
import { readFileSync } from "node:fs";
import type { Coopfile } from "../config/coopfile.ts";
import { coopfileHash } from "../config/coopfile_hash.ts";
import { loadCoopfile } from "../config/coopfile_load.ts";
import { errorMessage } from "../errors/coop_error.ts";
import {
  type BaseManifest,
  type EnvironmentPaths,
  environmentPaths,
} from "./environment_layout.ts";

/** One environment: its recipe, its paths and its base's state. */
export interface EnvironmentState {
  /** The Coopfile's absolute path (as coop.toml names it, resolved). */
  coopfilePath: string;
  /** The resolved Coopfile (global file merged in). */
  coopfile: Coopfile;
  /** Where it lives in the state directory. */
  paths: EnvironmentPaths;
  /** The built base's manifest; null when the base is not built (or its manifest unreadable). */
  manifest: BaseManifest | null;
  /** Why `manifest` is null when a manifest file exists but cannot be used; else null. */
  manifestProblem: string | null;
  /** True when the base was built from a different Coopfile than the current one. */
  stale: boolean;
}

/** Reads a base manifest; null when there is none, a reason string when it is unusable. */
export function readManifest(path: string): BaseManifest | null | string {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return null;
    return `cannot read ${path}: ${errorMessage(error)}`;
  }
  try {
    const data = JSON.parse(text) as Partial<BaseManifest>;
    if (typeof data.hash !== "string" || typeof data.image !== "string") {
      return `${path} is not a base manifest (no hash or image)`;
    }
    return data as BaseManifest;
  } catch (error) {
    return `${path} is not valid JSON: ${errorMessage(error)}`;
  }
}

/**
 * Loads the environment whose Coopfile is `coopfilePath` under `stateDir`. Throws the
 * Coopfile's `ConfigError` when it is invalid.
 */
export function loadEnvironment(stateDir: string, coopfilePath: string): EnvironmentState {
  const coopfile = loadCoopfile({ project: coopfilePath });
  const paths = environmentPaths(stateDir, coopfilePath);
  const read = readManifest(paths.manifest);
  const manifest = typeof read === "string" ? null : read;
  return {
    coopfilePath,
    coopfile,
    paths,
    manifest,
    manifestProblem: typeof read === "string" ? read : null,
    stale: manifest !== null && manifest.hash !== coopfileHash(coopfile),
  };
}
