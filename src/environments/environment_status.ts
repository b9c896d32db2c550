/**
 * The environments section of `coop sandbox status`: each referenced Coopfile, whether its
 * base is built (image, size, date) and how much each user's layers use. Sizes come from a
 * bounded lstat walk that never follows a symlink.
 * @module
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { CoopConfig } from "../config/config.ts";
import { ConfigError } from "../config/config_diagnostic.ts";
import { errorMessage } from "../errors/coop_error.ts";
import { environmentPaths } from "./environment_layout.ts";
import { referencedEnvironments } from "./environment_lifecycle.ts";
import { loadEnvironment } from "./environment_state.ts";
import { treeSize } from "./sandbox_tree.ts";

/** One user's layers in one environment. */
export interface UserLayers {
  /** The user. */
  user: string;
  /** Their persistent upper plus session uppers, bytes (a lower bound when `partial`). */
  upperBytes: number;
  /** Session uppers present. */
  sessions: number;
  /** Their persist directories, bytes. */
  persistBytes: number;
  /** True when a size walk stopped at its limit. */
  partial: boolean;
}

/** One environment as `coop sandbox status` reports it. */
export interface EnvironmentStatus {
  /** The Coopfile. */
  coopfile: string;
  /** The environment's id (its directory under `<state_dir>/environments`). */
  id: string;
  /** Who uses it: `[sandbox]`, `user bob`, `cron job digest`. */
  usedBy: string[];
  /** Why the Coopfile or the manifest cannot be used; null when fine. */
  problem: string | null;
  /** True when the base is built. */
  built: boolean;
  /** True when the base was built from an older version of the Coopfile. */
  stale: boolean;
  /** `[base] image` as built, e.g. `debian:bookworm`. */
  image: string | null;
  /** The base's size from its manifest, bytes. */
  sizeBytes: number | null;
  /** When the base was built (ISO 8601). */
  builtAt: string | null;
  /** Each user's layers. */
  users: UserLayers[];
}

function names(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch {
    return [];
  }
}

/** Every environment `config` references, with its base and the users' layers. */
export function environmentsStatus(config: CoopConfig): EnvironmentStatus[] {
  const stateDir = config.agent.stateDir;
  return [...referencedEnvironments(config)].map(([coopfile, usedBy]) => {
    const paths = environmentPaths(stateDir, coopfile);
    const status: EnvironmentStatus = {
      coopfile,
      id: paths.id,
      usedBy,
      problem: null,
      built: false,
      stale: false,
      image: null,
      sizeBytes: null,
      builtAt: null,
      users: [],
    };
    try {
      const environment = loadEnvironment(stateDir, coopfile);
      status.problem = environment.manifestProblem;
      status.stale = environment.stale;
      if (environment.manifest) {
        status.built = true;
        status.image = environment.manifest.image;
        status.sizeBytes = environment.manifest.sizeBytes;
        status.builtAt = environment.manifest.builtAt;
      }
    } catch (error) {
      status.problem = error instanceof ConfigError ? error.message : errorMessage(error);
    }
    const users = new Set([
      ...names(join(paths.root, "uppers")),
      ...names(join(paths.root, "persist")),
    ]);
    for (const user of [...users].sort()) {
      const upper = treeSize(join(paths.root, "uppers", user));
      const persist = treeSize(join(paths.root, "persist", user));
      status.users.push({
        user,
        upperBytes: upper.bytes,
        sessions: names(join(paths.root, "uppers", user, "sessions")).length,
        persistBytes: persist.bytes,
        partial: upper.partial || persist.partial,
      });
    }
    return status;
  });
}
