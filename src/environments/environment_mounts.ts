/**
 * What an environment adds to one user's sandbox policy: the overlay root (the built base
 * below, the user's upper above), the `[session] persist` binds and the variables. The
 * directories holding them are created here, 0700 (0710 for the sandbox's gid when Coop runs
 * as root); the host never executes or mounts anything inside them.
 * @module
 */
import { createHash } from "node:crypto";
import { dirname, join } from "node:path";
import { USER_NAME_PATTERN } from "../config/user_name.ts";
import { EnvironmentError } from "./environment_errors.ts";
import { reachableForSandbox } from "./sandbox_search.ts";
import type { EnvironmentPaths } from "./environment_layout.ts";
import type { EnvironmentState } from "./environment_state.ts";

export { EnvironmentError };

/** The chat session a command runs for (`COOP_SESSION`, and `upper = "session"`). */
export interface EnvironmentSession {
  /** The channel, e.g. `telegram`, `http`, `cron`. */
  channel: string;
  /** The session id within the channel. */
  id: string;
}

/** The policy fields an environment sets (the sandbox policy's `rootfs`, `persist`, `env`). */
export interface EnvironmentMounts {
  /** The overlay root: the base (or `"host"`) read-only below, the user's upper above. */
  rootfs: { lower: string; upper: string; work: string };
  /** `[session] persist` entries: a per-user host directory bound read-write at `target`. */
  persist: { source: string; target: string }[];
  /** `[env]` and `COOP_SESSION`. */
  env: Record<string, string>;
}

/** The directory name of a session's upper: a digest, so any channel or id is a safe name. */
export function sessionDirName(session: EnvironmentSession): string {
  return createHash("sha256").update(`${session.channel}\0${session.id}`).digest("hex")
    .slice(0, 32);
}

/** Where a user's session uppers live: `uppers/<user>/sessions/`. */
export function sessionUppersDir(paths: EnvironmentPaths, user: string): string {
  return join(paths.root, "uppers", user, "sessions");
}

/** A session's own upper and work directories (`upper = "session"`). */
export function sessionUpper(
  paths: EnvironmentPaths,
  user: string,
  session: EnvironmentSession,
): { dir: string; upper: string; work: string } {
  const dir = join(sessionUppersDir(paths, user), sessionDirName(session));
  return { dir, upper: join(dir, "upper"), work: join(dir, "work") };
}

/**
 * The policy fields of `user`'s sandbox in `environment`, creating their directories.
 * Fails closed with an `EnvironmentError` when the base is not built, the user's name cannot
 * be a directory, or `upper = "session"` has no session to belong to. `configFile` is named
 * in the `coop init` hint.
 */
export function environmentMounts(
  environment: EnvironmentState,
  user: string,
  session: EnvironmentSession | undefined,
  configFile: string,
): EnvironmentMounts {
  const { coopfile, coopfilePath, paths, manifest } = environment;
  if (manifest === null) {
    const why = environment.manifestProblem ? ` (${environment.manifestProblem})` : "";
    throw new EnvironmentError(
      "environment.not_built",
      `the environment ${coopfilePath} is not built${why}; the owner builds it with ` +
        `\`coop init --config ${configFile}\``,
    );
  }
  // The name becomes a directory: only names that are safe ones get an upper.
  if (!USER_NAME_PATTERN.test(user)) {
    throw new EnvironmentError(
      "environment.bad_user",
      `"${user}" cannot have an environment: only configured user names can`,
    );
  }
  let layer: { upper: string; work: string };
  if (coopfile.session.upper === "session") {
    if (!session) {
      throw new EnvironmentError(
        "environment.no_session",
        `${coopfilePath} keeps the upper layer per session ([session] upper = "session"), ` +
          "and this command belongs to none",
      );
    }
    layer = sessionUpper(paths, user, session);
  } else {
    layer = paths.upper(user);
  }
  // The library makes the upper, work and persist directories themselves, owned by the
  // sandbox's root; Coop makes (and, as root, opens for search) the directories they are in.
  const stateDir = dirname(dirname(paths.root));
  reachableForSandbox(stateDir, dirname(layer.upper));
  if (coopfile.base.kind !== "host") reachableForSandbox(stateDir, paths.rootfs);
  const persist = coopfile.session.persist.map((target, index) => {
    const source = paths.persist(user, index);
    reachableForSandbox(stateDir, dirname(source));
    return { source, target };
  });
  return {
    rootfs: {
      lower: coopfile.base.kind === "host" ? "host" : paths.rootfs,
      upper: layer.upper,
      work: layer.work,
    },
    persist,
    env: { ...coopfile.env, ...(session ? { COOP_SESSION: session.id } : {}) },
  };
}
