/**
 * Sandbox cgroups that a process which died left behind. A gateway killed outright (SIGKILL,
 * a crash) cannot remove its sandboxes' cgroups, nor the ones made ahead for its idle inits
 * (prestart.ts); nothing else would, so each such death left a few `coop-<pid>-*` directories
 * below its cgroup until the next reboot. `coop start` sweeps them once as it starts.
 * @module
 */
import { readdirSync, rmdirSync } from "node:fs";
import process from "node:process";
import { getLogger } from "@logtape/logtape";
import { cgroupHost } from "./cgroup_host.ts";
import { processAlive } from "./process_alive.ts";

const log = getLogger(["coop", "sandbox"]);

/** `sandboxCgroupName()`'s names: `coop-<pid>-<realm>-<n>`. */
const SANDBOX_CGROUP = /^coop-(\d+)-[0-9a-z]+-\d+$/;

/** What one sweep did. */
export interface CgroupSweep {
  /** Directories removed: empty, named for a process that is gone. */
  removed: string[];
  /** Directories named for a gone process that could not be removed (still has tasks, say). */
  kept: string[];
}

/**
 * Removes the sandbox cgroups below `parents` (default: where this process's sandboxes' cgroups
 * go, in every hierarchy it uses) whose creating process is gone and that are empty. One named
 * for a live process — this one, another gateway, or a pid reused since — is left alone, and so
 * is one that still holds a task (`rmdir` refuses it): nothing running is ever touched.
 *
 * @example
 * ```ts
 * import { sweepDeadSandboxCgroups } from "./mod.ts";
 * const { removed } = sweepDeadSandboxCgroups();
 * console.error(`removed ${removed.length} cgroups left by processes that died`);
 * ```
 */
export function sweepDeadSandboxCgroups(parents: readonly string[] = ownParents()): CgroupSweep {
  const sweep: CgroupSweep = { removed: [], kept: [] };
  for (const parent of parents) {
    let names: string[];
    try {
      names = readdirSync(parent);
    } catch {
      continue; // gone, or not ours to read: nothing to sweep there
    }
    for (const name of names) {
      const pid = Number(SANDBOX_CGROUP.exec(name)?.[1]);
      if (!Number.isSafeInteger(pid) || pid === process.pid || processAlive(pid)) continue;
      try {
        rmdirSync(`${parent}/${name}`);
        sweep.removed.push(`${parent}/${name}`);
      } catch {
        sweep.kept.push(`${parent}/${name}`);
      }
    }
  }
  if (sweep.removed.length > 0 || sweep.kept.length > 0) {
    log.info("sandbox.cgroup.swept {removed} cgroups of processes that are gone", {
      event: "sandbox.cgroup.swept",
      removed: sweep.removed.length,
      kept: sweep.kept,
    });
  }
  return sweep;
}

/** The directories this process's sandbox cgroups are made in: v2's, and each v1 hierarchy's. */
function ownParents(): string[] {
  const host = cgroupHost();
  const parents = new Set(Object.values(host.v1.dirs));
  if (host.v2) parents.add(host.v2.dir);
  return [...parents];
}
