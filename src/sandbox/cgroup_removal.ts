/**
 * Sandbox cgroups removed off the `exec()` critical path (issue 15): a sandbox's status
 * resolves once its violations are read; its cgroup(s) — with any process still in them,
 * killed first — are removed right after, in the background. Every removal is kept until it
 * has finished, so that `settleSandboxCgroups()` (prestart.ts) can await them all.
 * @module
 */
import { rmdirSync } from "node:fs";
import process from "node:process";
import { getLogger } from "@logtape/logtape";
import type { SandboxCgroup } from "./cgroup_files.ts";

const log = getLogger(["coop", "sandbox"]);

/** Removals still running; each settles (it never rejects) and leaves the set. */
const removals = new Set<Promise<void>>();
/** The cgroups those removals are for (removed at once if the process ends first). */
const removing = new Set<SandboxCgroup>();
/** Removals that failed since the last `awaitCgroupRemovals()`. */
const failures: Error[] = [];
let exitHookSet = false;

/**
 * Removes a sandbox's cgroup(s) once the current event-loop turn has ended — killing whatever
 * is still in them first, as `destroy()` does. A failure is logged and reported by
 * `awaitCgroupRemovals()`.
 */
export function removeCgroupLater(cgroup: SandboxCgroup): void {
  setExitHook();
  removing.add(cgroup);
  const removal = new Promise<void>((done) => setTimeout(done, 0))
    .then(() => cgroup.destroy())
    .catch((error: Error) => {
      failures.push(error);
      log.error("sandbox.cgroup.remove_failed {error}", { error: error.message });
    })
    .finally(() => {
      removals.delete(removal);
      removing.delete(cgroup);
    });
  removals.add(removal);
}

/** Waits until every pending removal has finished; throws their errors (each was logged). */
export async function awaitCgroupRemovals(): Promise<void> {
  while (removals.size > 0) await Promise.all([...removals]);
  if (failures.length > 0) {
    const errors = failures.splice(0);
    throw new AggregateError(errors, errors.map((e) => e.message).join("; "));
  }
}

/**
 * The cgroup of an ended sandbox is an empty directory that would outlive the process, so
 * an ending realm removes the pending ones synchronously: a Worker's `unload`, the process's
 * `exit` (`Deno.exit()` included). A gateway killed outright leaves them, as it leaves a
 * running sandbox's cgroup.
 */
function setExitHook(): void {
  if (exitHookSet) return;
  exitHookSet = true;
  globalThis.addEventListener?.("unload", removePendingNow, { once: true });
  process.once("exit", removePendingNow);
}

function removePendingNow(): void {
  for (const cgroup of removing) removeEmptyNow(cgroup);
}

/** Removes a cgroup nothing runs in any more, synchronously; best effort (the process ends). */
export function removeEmptyNow(cgroup: SandboxCgroup): void {
  for (const dir of cgroup.directories()) {
    try {
      rmdirSync(dir);
    } catch {
      // already gone, or still busy: nothing more can be done here
    }
  }
}
