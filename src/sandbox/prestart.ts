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
 * @module
 */
import { OUT, PARAM, type Trampoline } from "./ffi.ts";
import { stepName } from "./protocol.ts";
import { setupFailure } from "./setup_failure.ts";

/** What clone and the id maps fix: sandboxes of one shape are interchangeable before go. */
export interface SandboxShape {
  newNet: boolean;
  uid: number;
  gid: number;
}

/** At most this many shapes keep an idle sandbox (one per shape); the least recent goes. */
const MAX_IDLE_SHAPES = 4;

const idleByLibrary = new Map<Trampoline, Map<string, Int32Array>>();
const aliveBuffer = new Int32Array(1);

function keyOf(shape: SandboxShape): string {
  return `${shape.newNet ? "net" : "host"}:${shape.uid}:${shape.gid}`;
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

/**
 * The idle init of `shape` if one is alive (it is then no longer idle), else null. One that
 * died while idle — killed by someone with the gateway's uid, say — is reaped and dropped.
 */
export function takePrestarted(lib: Trampoline, shape: SandboxShape): Int32Array | null {
  const idle = idleByLibrary.get(lib);
  const key = keyOf(shape);
  const out = idle?.get(key);
  if (!out) return null;
  idle!.delete(key);
  if (lib.coop_wait(out[OUT.pid], aliveBuffer, null) === 0) return out;
  lib.coop_discard(out);
  return null;
}

/**
 * Makes sure an init of `shape` is waiting for the next command. Best effort: when it cannot
 * be started, the next command starts cold and reports the real error then.
 */
export function prestartNext(lib: Trampoline, shape: SandboxShape): void {
  let idle = idleByLibrary.get(lib);
  if (!idle) {
    idleByLibrary.set(lib, idle = new Map());
    // A realm that ends before its process (a worker) takes its idle inits along.
    globalThis.addEventListener?.("unload", discardPrestarted, { once: true });
  }
  const key = keyOf(shape);
  if (idle.has(key)) return;
  let out: Int32Array;
  try {
    out = prestart(lib, shape);
  } catch {
    return;
  }
  idle.set(key, out);
  if (idle.size > MAX_IDLE_SHAPES) {
    const [oldest, evicted] = idle.entries().next().value!;
    idle.delete(oldest);
    lib.coop_discard(evicted);
  }
}

/**
 * Starts a sandbox of `shape`: a prestarted init when one is idle, else a fresh one; `start`
 * gives it its spec (coop_start, which returns 0 or -1 with the failed step in `out`). Then
 * prestarts the next. Throws SandboxSetupError; nothing of the command ran then.
 */
export function startSandbox(
  lib: Trampoline,
  shape: SandboxShape,
  start: (out: Int32Array) => number,
): Int32Array {
  let out = takePrestarted(lib, shape);
  if (out && start(out) !== 0) {
    // Only "wait-go" can be the idle init's own fault (it died after the liveness check);
    // every other step failed because of the spec, and would fail on a fresh init too.
    if (stepName(out[OUT.errStep]) !== "wait-go") {
      throw setupFailure(out[OUT.errStep], out[OUT.errErrno]);
    }
    out = null;
  }
  if (!out) {
    out = prestart(lib, shape);
    if (start(out) !== 0) throw setupFailure(out[OUT.errStep], out[OUT.errErrno]);
  }
  prestartNext(lib, shape);
  return out;
}

/** Ends every idle init (they would otherwise live until the gateway exits). */
export function discardPrestarted(): void {
  for (const [lib, idle] of idleByLibrary) {
    for (const out of idle.values()) lib.coop_discard(out);
    idle.clear();
  }
}

/** How many idle inits there are (tests check that they stay bounded). */
export function prestartedCount(): number {
  return prestartedPids().length;
}

/** Host pids of the idle inits of this realm (for tests). */
export function prestartedPids(): number[] {
  const pids: number[] = [];
  for (const idle of idleByLibrary.values()) {
    for (const out of idle.values()) pids.push(out[OUT.pid]);
  }
  return pids;
}
