/**
 * The environments a config references, and what `coop sandbox reset` and `coop sandbox clean`
 * delete from the state directory: a user's upper layers (and persist directories), the
 * environments nothing references, the layers of people no longer known, builds left
 * unfinished and session uppers whose session is gone.
 * @module
 */
import { readdirSync } from "node:fs";
import { join } from "node:path";
import type { CoopConfig } from "../config/config.ts";
import { environmentPaths } from "./environment_layout.ts";
import { type EnvironmentSession, sessionDirName, sessionUppersDir } from "./environment_mounts.ts";
import { removeEnvironmentDir, removeLayerDir, type UpperLocker } from "./layer_removal.ts";
import { removeTree, type TreeSize } from "./sandbox_tree.ts";

/** One thing deleted, and the space it used. */
export interface Removed {
  /** What it was, e.g. `upper of bob`. */
  what: string;
  /** Its path. */
  path: string;
  /** Disk space it used (a lower bound when `partial`). */
  bytes: number;
  /** True when its size could not be measured whole. */
  partial: boolean;
}

/** One place a config names an environment. */
export interface EnvironmentReference {
  /** The Coopfile, absolute. */
  coopfile: string;
  /** Who it applies to: `[sandbox]`, `user bob`, `cron job digest`. */
  who: string;
  /** The key that names it, e.g. `users[1].sandbox.environment`. */
  key: string;
}

/** Every place `config` names an environment, in file order. */
export function environmentReferences(config: CoopConfig): EnvironmentReference[] {
  const out: EnvironmentReference[] = [];
  const add = (coopfile: string | undefined, who: string, key: string) => {
    if (coopfile !== undefined) out.push({ coopfile, who, key });
  };
  add(config.sandbox.defaults.environment, "[sandbox]", "sandbox.environment");
  config.users.forEach((user, i) =>
    add(user.sandbox.environment, `user ${user.name}`, `users[${i}].sandbox.environment`)
  );
  config.cron.forEach((job, i) =>
    add(job.sandbox.environment, `cron job ${job.name}`, `cron[${i}].sandbox.environment`)
  );
  return out;
}

/** The Coopfiles a config references, each with who references it (`[sandbox]`, `user bob` …). */
export function referencedEnvironments(config: CoopConfig): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const ref of environmentReferences(config)) {
    out.set(ref.coopfile, [...out.get(ref.coopfile) ?? [], ref.who]);
  }
  return out;
}

/** The directory holding every environment of a state directory. */
export function environmentsDir(stateDir: string): string {
  return join(stateDir, "environments");
}

/** Names in `dir` (none when it does not exist). */
function names(dir: string): string[] {
  try {
    return readdirSync(dir).sort();
  } catch (error) {
    if ((error as { code?: string }).code === "ENOENT") return [];
    throw error;
  }
}

function remove(what: string, path: string, out: Removed[], removeIt = removeTree): void {
  const size: TreeSize = removeIt(path);
  if (size.entries > 0) out.push({ what, path, bytes: size.bytes, partial: size.partial });
}

/**
 * Deletes `user`'s upper layers (their own and every session's) in every environment of
 * `stateDir`, and with `persist` their persist directories too.
 */
export function resetUser(
  stateDir: string,
  user: string,
  persist: boolean,
  lock: UpperLocker,
): Removed[] {
  const out: Removed[] = [];
  for (const id of names(environmentsDir(stateDir))) {
    const root = join(environmentsDir(stateDir), id);
    remove(
      `upper of ${user} in ${id}`,
      join(root, "uppers", user),
      out,
      (dir) => removeLayerDir(dir, lock, true),
    );
    if (persist) {
      remove(`persist directories of ${user} in ${id}`, join(root, "persist", user), out);
    }
  }
  return out;
}

/** What `cleanEnvironments` may keep besides the config's environments. */
export interface CleanContext {
  /** Everyone who may have layers: configured users and paired people. */
  knownUsers: ReadonlySet<string>;
  /**
   * The environment sessions of the existing chat sessions (`environmentSessionOf`); null:
   * unknown, keep every session upper.
   */
  sessions: readonly EnvironmentSession[] | null;
  /** Takes an upper's lock: nothing a sandbox has mounted is removed. */
  lock: UpperLocker;
}

/**
 * Deletes what nothing owns: environments no Coopfile of the config references, upper and
 * persist directories of unknown users, unfinished builds (`base.next`) and session uppers
 * whose session no longer exists. A build in progress (`coop init` holds the base's lock) is
 * left alone.
 */
export function cleanEnvironments(config: CoopConfig, context: CleanContext): Removed[] {
  const stateDir = config.agent.stateDir;
  const out: Removed[] = [];
  const referenced = new Map(
    [...referencedEnvironments(config).keys()].map((path) => [
      environmentPaths(stateDir, path).id,
      path,
    ]),
  );
  const liveSessions = context.sessions === null
    ? null
    : new Set(context.sessions.map((session) => sessionDirName(session)));
  for (const id of names(environmentsDir(stateDir))) {
    const root = join(environmentsDir(stateDir), id);
    const coopfile = referenced.get(id);
    if (coopfile === undefined) {
      remove(
        `environment ${id} (no Coopfile in the config references it)`,
        root,
        out,
        (dir) => removeEnvironmentDir(dir, context.lock),
      );
      continue;
    }
    const paths = environmentPaths(stateDir, coopfile);
    // A build in progress holds the base's lock: its `base.next` is not unfinished, it is busy.
    const building = context.lock(paths.base);
    if (building) {
      try {
        remove(`unfinished build of ${coopfile}`, paths.next, out);
      } finally {
        building.release();
      }
    }
    for (const user of names(join(root, "uppers"))) {
      if (!context.knownUsers.has(user)) {
        remove(
          `upper of ${user} (no longer a user)`,
          join(root, "uppers", user),
          out,
          // No one configured waits for these any more: the lock files go as well.
          (dir) => removeLayerDir(dir, context.lock, false),
        );
        continue;
      }
      if (liveSessions === null) continue;
      const sessions = sessionUppersDir(paths, user);
      for (const name of names(sessions)) {
        if (!liveSessions.has(name)) {
          remove(
            `session upper of ${user} (session ended)`,
            join(sessions, name),
            out,
            (dir) => removeLayerDir(dir, context.lock, false),
          );
        }
      }
    }
    for (const user of names(join(root, "persist"))) {
      if (!context.knownUsers.has(user)) {
        remove(
          `persist directories of ${user} (no longer a user)`,
          join(root, "persist", user),
          out,
        );
      }
    }
  }
  return out;
}

/** Deletes the session upper of (`channel`, `id`) of `user` in every environment: /clear. */
export function discardSessionUppers(
  stateDir: string,
  user: string,
  session: { channel: string; id: string },
  lock: UpperLocker,
): Removed[] {
  const out: Removed[] = [];
  const name = sessionDirName(session);
  for (const id of names(environmentsDir(stateDir))) {
    const path = join(environmentsDir(stateDir), id, "uppers", user, "sessions", name);
    remove(`session upper of ${user}`, path, out, (dir) => removeLayerDir(dir, lock, false));
  }
  return out;
}
