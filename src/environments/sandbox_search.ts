/**
 * Lets the sandbox's root reach an environment's directories. When Coop runs as root, a
 * sandbox's root is a dedicated host uid/gid (`host_ids.ts`) that owns nothing on the host,
 * and the init mounts the base, the upper and the persist directories with that identity: it
 * must be able to search every directory on their paths. The state directory and the
 * environment directories are 0700 for Coop; here their group becomes the sandbox's gid with
 * search only (0710), so that no local account — only the sandbox's root, while the init
 * mounts — gets through. Unprivileged, the sandbox's root is the invoker: nothing to do.
 * @module
 */
import { chmodSync, chownSync, lstatSync, mkdirSync } from "node:fs";
import process from "node:process";
import { relative, sep } from "node:path";
import { DEFAULT_SANDBOX_HOST_ID } from "../sandbox/host_ids.ts";
import { EnvironmentError } from "./environment_errors.ts";

/** Mode of every directory Coop creates under `<state_dir>/environments`. */
export const ENVIRONMENT_DIR_MODE = 0o700;

/**
 * Creates `dir` (0700) under `stateDir` and, when Coop runs as root, lets the sandbox's gid
 * search every directory from `stateDir` down to it. A directory whose group already has
 * other permissions keeps them: it is refused instead of changed (fail closed, named).
 */
export function reachableForSandbox(
  stateDir: string,
  dir: string,
  sandboxGid: number = DEFAULT_SANDBOX_HOST_ID,
  asRoot: boolean = process.getuid?.() === 0,
): void {
  mkdirSync(dir, { recursive: true, mode: ENVIRONMENT_DIR_MODE });
  if (!asRoot) return;
  const rel = relative(stateDir, dir);
  if (rel.startsWith("..")) throw new Error(`${dir} is not inside ${stateDir}`);
  let current = stateDir;
  for (const part of ["", ...rel.split(sep).filter(Boolean)]) {
    if (part) current = `${current}${sep}${part}`;
    const info = lstatSync(current);
    if (info.isSymbolicLink() || !info.isDirectory()) {
      throw new EnvironmentError(
        "environment.bad_path",
        `${current} must be a directory (not a symlink) for an environment`,
      );
    }
    const mode = info.mode & 0o7777;
    if ((mode & 0o001) !== 0) continue; // anyone may search it already
    if (info.gid === sandboxGid) {
      if ((mode & 0o010) === 0) chmodSync(current, mode | 0o010);
      continue;
    }
    if ((mode & 0o070) !== 0) {
      throw new EnvironmentError(
        "environment.unreachable",
        `the sandbox's root (gid ${sandboxGid}) cannot search ${current}, whose group ` +
          `(${info.gid}) has permissions of its own; give it mode o+x or group ${sandboxGid}`,
      );
    }
    chownSync(current, info.uid, sandboxGid);
    chmodSync(current, mode | 0o010);
  }
}
