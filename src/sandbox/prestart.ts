/**
 * Sandboxes started ahead of time.
 *
 * A sandbox's first half — clone into fresh namespaces, the init exec'd, the uid/gid maps
 * written — needs nothing of the command, and is about a third of a sandbox's latency (the
 * network namespace alone is most of it). So every start hands the command an init that was
 * prestarted earlier and, right after sending it the spec, prestarts the next one of the same
 * shape: the clone then runs on the gateway's thread while the current init builds its world
 * on another CPU, instead of before it.
 *
 * What a prestarted init has: namespaces and id maps, nothing else. Everything that depends on
 * the policy or the moment (the workspace, protected paths, cgroup, Landlock, seccomp, limits,
 * environment) is decided and applied after the spec arrives, exactly as for a cold start, so
 * a sandbox's age changes nothing about what it enforces. An idle init holds no privilege
 * outside its own namespaces, runs nothing, and exits when the gateway does (its go socket
 * closes). Each init serves one command.
 *
 * Cgroups (issue 15): on a cgroup limits path the next init is also given its cgroup ahead —
 * made with the limits of the command that prestarted it and the init moved in while idle —
 * so that neither the cgroup's creation nor the move is on the next command's path. Idle
 * inits are therefore kept per shape and cgroup plan; a command takes the one whose plan is
 * identical to its own. Failing that, it takes another of its shape and moves it into a
 * fresh cgroup made for its plan, exactly as a cold start does (no cgroup, no sandbox: the
 * error names the `cgroup` step), and the other plan's cgroup is removed. An init in a cgroup
 * never serves a command that has none. Whichever way, the limits were written before the
 * init's go byte and only then may it run anything.
 * @module
 */
import process from "node:process";
import { getLogger } from "@logtape/logtape";
import type { SandboxCgroup } from "./cgroup_files.ts";
import { awaitCgroupRemovals, removeCgroupLater, removeEmptyNow } from "./cgroup_removal.ts";
import { OUT, PARAM, type Trampoline } from "./ffi.ts";
import type { LimitPlan } from "./limits.ts";
import { stepName } from "./protocol.ts";
import {
  cgroupHierarchies,
  cgroupPlanKey,
  moveIntoCgroup,
  sandboxCgroup,
} from "./sandbox_cgroup.ts";
import { setupFailure } from "./setup_failure.ts";

const log = getLogger(["coop", "sandbox"]);

/** What clone and the id maps fix: sandboxes of one shape are interchangeable before go. */
export interface SandboxShape {
  newNet: boolean;
  uid: number;
  gid: number;
}

/** At most this many idle inits are kept (one per shape and cgroup plan); the oldest goes. */
const MAX_IDLE = 4;

/**
 * An idle init and the cgroup it was moved into — null while still in the gateway's: its plan
 * has none, or the cgroup is not made yet — with that cgroup's plan.
 */
interface Idle {
  out: Int32Array;
  cgroup: SandboxCgroup | null;
  /** `cgroupPlanKey()` of the plan `cgroup` was made for ("" without one). */
  planKey: string;
  /** `cgroupHierarchies()` of that plan ("" without one). */
  hierarchies: string;
}

/** Idle inits by library, then by `shape|cgroup plan` key, oldest first. */
const idleByLibrary = new Map<Trampoline, Map<string, Idle>>();
const aliveBuffer = new Int32Array(1);

/**
 * Ends the shape's part of an idle-init key; the cgroup plan key follows (empty without
 * cgroups, so such a key ends with this; a plan key never does).
 */
const SHAPE_KEY_END = "|";

function shapeKey(shape: SandboxShape): string {
  return `${shape.newNet ? "net" : "host"}:${shape.uid}:${shape.gid}${SHAPE_KEY_END}`;
}

function paramsOf(shape: SandboxShape): Int32Array {
  const params = new Int32Array(PARAM.count);
  params[PARAM.newNet] = shape.newNet ? 1 : 0;
  params[PARAM.outerUid] = shape.uid;
  params[PARAM.outerGid] = shape.gid;
  return params;
}

/** Clones a new init of `shape`, waiting for its spec; throws SandboxSetupError. */
export function prestart(lib: Trampoline, shape: SandboxShape): Int32Array {
  const out = new Int32Array(OUT.count);
  if (lib.coop_prestart(paramsOf(shape), out) !== 0) {
    throw setupFailure(out[OUT.errStep], out[OUT.errErrno]);
  }
  return out;
}

/** Kills and reaps an idle init; its cgroup, empty then, is removed in the background. */
function discardIdle(lib: Trampoline, idle: Idle): void {
  lib.coop_discard(idle.out);
  if (idle.cgroup) removeCgroupLater(idle.cgroup);
}

/**
 * An idle init for a command of `shape` under `plan`, if one is alive (it is then no longer
 * idle): the one prepared for that very plan, else — when the plan has cgroups — one of the
 * same shape that moving into the plan's cgroups takes wholly out of its own (in none yet, or
 * in the same hierarchies; the caller moves it). One that died while idle — killed by someone
 * with the gateway's uid, say — is reaped and dropped.
 */
function takeIdle(lib: Trampoline, shape: SandboxShape, plan: LimitPlan): Idle | null {
  const idle = idleByLibrary.get(lib);
  if (!idle) return null;
  const prefix = shapeKey(shape);
  const exact = prefix + cgroupPlanKey(plan);
  const hierarchies = cgroupHierarchies(plan);
  const keys = [exact];
  if (hierarchies !== "") {
    for (const [key, entry] of idle) {
      const movable = entry.cgroup === null || entry.hierarchies === hierarchies;
      if (key.startsWith(prefix) && key !== exact && movable) keys.push(key);
    }
  }
  for (const key of keys) {
    const entry = idle.get(key);
    if (!entry) continue;
    idle.delete(key);
    if (lib.coop_wait(entry.out[OUT.pid], aliveBuffer, null) === 0) return entry;
    // Reaped just now: its pid is free again, and may name another child before the discard,
    // whose wait must not be on it.
    entry.out[OUT.pid] = -1;
    discardIdle(lib, entry);
  }
  return null;
}

/**
 * Makes sure an init of `shape` is waiting for the next command under `plan`, soon in a cgroup
 * of its own with the plan's limits when it has one. Best effort: when it cannot be started,
 * the next command starts cold and reports the real error then.
 */
export function prestartNext(lib: Trampoline, shape: SandboxShape, plan: LimitPlan): void {
  let idle = idleByLibrary.get(lib);
  if (!idle) {
    idleByLibrary.set(lib, idle = new Map());
    // A realm that ends before its process (a worker) takes its idle inits along; an idle
    // init's cgroup would outlive even the process, so it goes too (unload or exit).
    globalThis.addEventListener?.("unload", discardPrestarted, { once: true });
    process.once("exit", discardPrestarted);
  }
  const planKey = cgroupPlanKey(plan);
  const key = shapeKey(shape) + planKey;
  if (idle.has(key)) return;
  let out: Int32Array;
  try {
    out = prestart(lib, shape);
  } catch {
    return;
  }
  const entry: Idle = { out, cgroup: null, planKey: "", hierarchies: "" };
  idle.set(key, entry);
  if (idle.size > MAX_IDLE) {
    const [oldest, evicted] = idle.entries().next().value!;
    idle.delete(oldest);
    discardIdle(lib, evicted);
  }
  // Its cgroup once this event-loop turn has ended: by then the command that is starting now
  // has its sockets and timers set, and builds its world on another CPU meanwhile.
  if (planKey !== "") setTimeout(() => prepareCgroup(lib, idle, key, entry, plan), 0);
}

/**
 * Makes an idle init's cgroup for `plan` and moves the init in, unless it was taken or
 * discarded meanwhile. When that fails the init is discarded with its cgroup (a half-done
 * move would leave it in some hierarchies only), and the next command starts cold.
 */
function prepareCgroup(
  lib: Trampoline,
  idle: Map<string, Idle>,
  key: string,
  entry: Idle,
  plan: LimitPlan,
): void {
  if (idle.get(key) !== entry) return;
  let cgroup: SandboxCgroup | null = null;
  try {
    cgroup = sandboxCgroup(plan);
    if (cgroup) moveIntoCgroup(cgroup, entry.out[OUT.pid]);
  } catch (error) {
    idle.delete(key);
    discardIdle(lib, { ...entry, cgroup });
    log.debug("sandbox.prestart.cgroup_failed {error}", { error: (error as Error).message });
    return;
  }
  entry.cgroup = cgroup;
  entry.planKey = cgroupPlanKey(plan);
  entry.hierarchies = cgroupHierarchies(plan);
}

/** A started sandbox: coop_start's `out`, and the cgroup(s) its init runs in (or null). */
export interface StartedSandbox {
  out: Int32Array;
  cgroup: SandboxCgroup | null;
}

/**
 * Starts a sandbox of `shape` under `plan`: a prestarted init when one is idle, else a fresh
 * one, in a cgroup with the plan's limits when it has one; `start` gives it its spec
 * (coop_start with `attach`, the cgroup directories to move it into first or null; it
 * returns 0 or -1 with the failed step in `out`). Then prestarts the next. Throws
 * SandboxSetupError (at the `cgroup` step when no cgroup could be made); nothing of the
 * command ran then, and nothing it started is left.
 */
export function startSandbox(
  lib: Trampoline,
  shape: SandboxShape,
  plan: LimitPlan,
  start: (out: Int32Array, attach: Uint8Array | null) => number,
): StartedSandbox {
  const planKey = cgroupPlanKey(plan);
  const idle = takeIdle(lib, shape, plan);
  const started = idle ? startIdle(lib, idle, plan, planKey, start) : null;
  if (started) {
    prestartNext(lib, shape, plan);
    return started;
  }
  const cgroup = sandboxCgroup(plan);
  let out: Int32Array;
  try {
    out = prestart(lib, shape);
    if (start(out, cgroup ? cgroup.attachList() : null) !== 0) {
      throw setupFailure(out[OUT.errStep], out[OUT.errErrno]);
    }
  } catch (error) {
    if (cgroup) removeCgroupLater(cgroup);
    throw error;
  }
  prestartNext(lib, shape, plan);
  return { out, cgroup };
}

/**
 * Starts an idle init: in the cgroup prepared with it when that was made for this very plan,
 * else moved by `start` into a fresh one made now. Null when the init died before its go
 * byte (the caller starts a fresh one); throws for any other failure.
 */
function startIdle(
  lib: Trampoline,
  idle: Idle,
  plan: LimitPlan,
  planKey: string,
  start: (out: Int32Array, attach: Uint8Array | null) => number,
): StartedSandbox | null {
  // An idle init whose cgroup is not made yet (or that needs none) counts as in none.
  const prepared = idle.cgroup ? idle.planKey === planKey : planKey === "";
  let cgroup: SandboxCgroup | null;
  try {
    cgroup = prepared ? idle.cgroup : sandboxCgroup(plan);
  } catch (error) {
    discardIdle(lib, idle);
    throw error;
  }
  if (start(idle.out, prepared || !cgroup ? null : cgroup.attachList()) === 0) {
    // Moved out of another plan's cgroup, which is empty now.
    if (!prepared && idle.cgroup) removeCgroupLater(idle.cgroup);
    return { out: idle.out, cgroup };
  }
  // coop_start has killed and reaped the init: its cgroups are empty.
  if (idle.cgroup) removeCgroupLater(idle.cgroup);
  if (!prepared && cgroup) removeCgroupLater(cgroup);
  // Only "wait-go" can be the idle init's own fault (it died after the liveness check);
  // every other step failed because of the spec, and would fail on a fresh init too.
  if (stepName(idle.out[OUT.errStep]) !== "wait-go") {
    throw setupFailure(idle.out[OUT.errStep], idle.out[OUT.errErrno]);
  }
  return null;
}

/** Ends every idle init (they would otherwise live until the gateway exits) and its cgroup. */
export function discardPrestarted(): void {
  for (const [lib, idle] of idleByLibrary) {
    for (const entry of idle.values()) {
      lib.coop_discard(entry.out);
      // Synchronously: this also runs as the process exits, when no timer fires any more.
      if (entry.cgroup) removeEmptyNow(entry.cgroup);
    }
    idle.clear();
  }
}

/**
 * Ends the idle inits that hold a cgroup and waits until every sandbox cgroup removal has
 * finished: then no cgroup of this realm's sandboxes is left. For tests and a gateway's
 * shutdown; throws the removals' errors (each was logged).
 */
export async function settleSandboxCgroups(): Promise<void> {
  for (const [lib, idle] of idleByLibrary) {
    for (const [key, entry] of idle) {
      // Kept: an init for a plan without cgroups (its key ends with the empty plan key). One
      // whose cgroup is still to be made goes too, or it would get one after this returned.
      if (!entry.cgroup && key.endsWith(SHAPE_KEY_END)) continue;
      idle.delete(key);
      discardIdle(lib, entry);
    }
  }
  await awaitCgroupRemovals();
}

/** How many idle inits there are (tests check that they stay bounded). */
export function prestartedCount(): number {
  return prestartedPids().length;
}

/** Host pids of the idle inits of this realm (for tests). */
export function prestartedPids(): number[] {
  const pids: number[] = [];
  for (const idle of idleByLibrary.values()) {
    for (const entry of idle.values()) pids.push(entry.out[OUT.pid]);
  }
  return pids;
}
