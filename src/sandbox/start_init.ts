/**
 * `startInit()`: a sandbox built up to its command — policy resolved to limits, ids, rootfs and
 * protected paths, the policy proxy started, the spec built and the init cloned. Everything it
 * started is undone when a step fails.
 * @module
 */
import process from "node:process";
import { getLogger } from "@logtape/logtape";
import { cgroupHost } from "./cgroup_host.ts";
import type { SandboxCgroup } from "./cgroup_files.ts";
import { DiskQuotaWatch } from "./disk_quota.ts";
import { SandboxSetupError } from "./errors.ts";
import { assertHostIdsFree } from "./host_ids.ts";
import { loadTrampoline, PARAM, type Trampoline } from "./ffi.ts";
import { type AppliedLimits, planLimits } from "./limits.ts";
import type { SandboxPolicy } from "./policy.ts";
import { type StartedSandbox, startSandbox } from "./prestart.ts";
import { protectedPathsOffLoop } from "./protected_paths.ts";
import { type PolicyProxy, startPolicyProxy } from "./proxy/policy_proxy.ts";
import { DenialWarnings } from "./proxy/denial_warnings.ts";
import { buildSpec } from "./spec.ts";
import { type OverlayMount, overlayMount } from "./held_overlay.ts";
import { HOST_LOWER_DIR, prepareRootfs } from "./rootfs.ts";
import { lockUpper, type UpperLock } from "./upper_lock.ts";
import { type OpenedTerminal, openTerminal } from "./terminal.ts";
import type { SpawnOptions } from "./spawn_options.ts";

const log = getLogger(["coop", "sandbox"]);

function outerIds(policy: SandboxPolicy): { uid: number; gid: number; idmapped: boolean } {
  // Root is never root inside: kuid 0 could write /proc/sys and more without Landlock. Nor is
  // it an id a host account has, which could signal the sandbox (ATTACKS P15). The workspace
  // is then idmapped so that files still belong to the invoker (ffi/spawn.c).
  const uid = process.getuid?.() ?? 0, gid = process.getgid?.() ?? 0;
  if (uid === 0) {
    assertHostIdsFree(policy.sandboxUid, policy.sandboxGid);
    return { uid: policy.sandboxUid, gid: policy.sandboxGid, idmapped: true };
  }
  return { uid, gid, idmapped: false };
}

/** Logs a sandbox that could not be built (the command never ran); returns the error. */
export function logSetupFailure(
  error: SandboxSetupError,
  argv: readonly string[],
): SandboxSetupError {
  log.info("sandbox.setup_failed {step} {errno}", { step: error.step, errno: error.errno, argv });
  return error;
}

/** A started init and what the gateway keeps for it until it is reaped. */
export interface StartedInit {
  lib: Trampoline;
  /** coop_start's `out`: pid, pidfd, pipes, report pipe, go socket. */
  out: Int32Array;
  limits: AppliedLimits;
  /** The [resource, value] rlimits of the limits plan (each session command sets them too). */
  rlimits: readonly (readonly [number, number])[];
  /** The ids the sandbox's root maps to outside. */
  ids: { uid: number; gid: number };
  cgroup: SandboxCgroup | null;
  proxy: PolicyProxy | null;
  quota: DiskQuotaWatch | null;
  /** The command's pseudo-terminal (`SpawnOptions.terminal`), else null. */
  tty: OpenedTerminal | null;
  /** The environment's upper layer on the host (mounted volatile: upper_sync.ts), else null. */
  upper: string | null;
  /** Its overlay: held or fresh (held_overlay.ts); `settle` it once the init is reaped. */
  overlay: OverlayMount | null;
  /** The upper's lock (upper_lock.ts), held until the init is reaped; else null. */
  upperLock: UpperLock | null;
  /** The protected paths (relative to the workspace) the init keeps read-only. */
  protectedPaths: readonly string[];
}

/**
 * Builds a sandbox under `policy` (workspace as given) up to the command: its spec sent, its
 * init building the world. `session` makes it a session sandbox (session.ts). Throws
 * SandboxSetupError, with everything it started undone. With an overlay root it first takes the
 * upper's lock (upper_lock.ts): one mount of an upper at a time, whichever process asks.
 * `options.signal` aborted before the init is started rejects with its reason, likewise undone.
 */
export async function startInit(
  policy: SandboxPolicy,
  argv: readonly string[],
  options: SpawnOptions,
  session = false,
): Promise<StartedInit> {
  const held: { lock: UpperLock | null } = { lock: null };
  try {
    return { ...await buildInit(policy, argv, options, session, held), upperLock: held.lock };
  } catch (error) {
    held.lock?.release();
    throw error;
  }
}

async function buildInit(
  policy: SandboxPolicy,
  argv: readonly string[],
  options: SpawnOptions,
  session: boolean,
  held: { lock: UpperLock | null },
): Promise<Omit<StartedInit, "upperLock">> {
  const lib = await loadTrampoline();
  // Over quota: refused before anything starts; under it, each file is bounded by what is left.
  const quota = await DiskQuotaWatch.before(policy);
  // Cancelled while the workspace was measured (SpawnOptions.signal): nothing is taken yet.
  options.signal?.throwIfAborted();
  const limited = quota ? { ...policy, fileSizeBytes: quota.fileSizeBytes } : policy;
  const limits = planLimits(limited, options.cgroupHost ?? cgroupHost());
  const ids = outerIds(policy);
  prepareRootfs(policy, ids, ids.idmapped);
  let changedHands = true;
  if (policy.rootfs && "upper" in policy.rootfs) {
    const locked = await lockUpper(lib, policy.rootfs.upper, {
      waitMs: options.upperWaitMs,
      signal: options.signal,
    });
    held.lock = locked.lock;
    changedHands = locked.changedHands;
    // While it waited, the holder may have been `coop sandbox reset`: make what it removed again.
    if (locked.waited) prepareRootfs(policy, ids, ids.idmapped);
  }
  // Off the event loop, and before anything is started: a workspace too large to check fails
  // here, closed (ATTACKS R12).
  const protectedPaths = await protectedPathsOffLoop(
    policy.workspace,
    policy.protectedNames,
    policy.scanLimit,
  );
  const proxied = policy.network === "proxy" || policy.network === "public";
  const proxy = proxied ? await startProxy(policy, ids, argv, options) : null;
  // From here on a failure closes the proxy: a work directory that cannot be made (a full
  // disk) left its relay thread, fds and socket directory behind, once per command.
  let overlay: OverlayMount | null = null;
  let spec: Uint8Array;
  try {
    // Cancelled while the workspace was checked or the proxy started: undone like a failure.
    options.signal?.throwIfAborted();
    overlay = overlayOf(lib, policy, ids, changedHands);
    spec = buildSpec(overlay ? withWorkdir(policy, overlay.workdir) : policy, argv, {
      env: options.env,
      cwd: options.cwd,
      failAt: options.failAt,
      rlimits: limits.rlimits,
      proxy: proxy ?? undefined,
      protectedPaths,
      session,
      terminal: options.terminal !== undefined,
      hold: overlay?.hold,
    });
  } catch (error) {
    overlay?.abandon();
    await proxy?.close();
    throw error;
  }
  let tty: OpenedTerminal | null = null;
  try {
    tty = options.terminal ? openTerminal(lib, options.terminal) : null;
  } catch (error) {
    overlay?.abandon();
    await proxy?.close();
    if (error instanceof SandboxSetupError) logSetupFailure(error, argv);
    throw error;
  }
  const shape = { newNet: policy.network !== "host", uid: ids.uid, gid: ids.gid };
  const params = new Int32Array(PARAM.count);
  params[PARAM.wantStdin] = options.stdin && !tty ? 1 : 0;
  params[PARAM.terminal] = tty ? tty.slave + 1 : 0;
  params[PARAM.held] = overlay && overlay.heldFd >= 0 ? overlay.heldFd + 1 : 0;
  const idmap = ids.idmapped ? new TextEncoder().encode(`${policy.workspace}\0`) : null;
  let started: StartedSandbox;
  try {
    // The cgroup comes with the init: prepared with it when the plan is the previous one's.
    started = startSandbox(
      lib,
      shape,
      limits,
      (out, attach) => lib.coop_start(spec, BigInt(spec.length), params, idmap, attach, out),
    );
  } catch (error) {
    tty?.closeMaster();
    tty?.terminal.socket.destroy();
    // A held overlay the init could not use is not given out again.
    overlay?.settle(null, error instanceof SandboxSetupError);
    await proxy?.close();
    if (error instanceof SandboxSetupError) logSetupFailure(error, argv);
    throw error;
  } finally {
    // The init holds its own copy now (or nothing does): the master then reads EIO once the
    // command's side is closed, which ends the relay.
    tty?.closeSlave();
  }
  return {
    lib,
    out: started.out,
    limits: limits.applied,
    rlimits: limits.rlimits,
    ids,
    cgroup: started.cgroup,
    proxy,
    quota,
    tty,
    upper: policy.rootfs && "upper" in policy.rootfs ? policy.rootfs.upper : null,
    overlay,
    protectedPaths,
  };
}

/** The overlay of a sandbox whose `policy` has an overlay root (held or fresh), else null. */
function overlayOf(
  lib: Trampoline,
  policy: SandboxPolicy,
  ids: { uid: number; gid: number; idmapped: boolean },
  changedHands: boolean,
): OverlayMount | null {
  const rootfs = policy.rootfs;
  if (!rootfs || !("work" in rootfs)) return null;
  const lower = rootfs.lower === "host" ? HOST_LOWER_DIR : rootfs.lower;
  return overlayMount(lib, { lower, upper: rootfs.upper, work: rootfs.work }, ids, changedHands);
}

function withWorkdir(policy: SandboxPolicy, work: string): SandboxPolicy {
  return { ...policy, rootfs: { ...policy.rootfs!, work } as SandboxPolicy["rootfs"] };
}

/** One policy proxy per sandbox; its socket belongs to the sandbox's outer ids. */
function startProxy(
  policy: SandboxPolicy,
  ids: { uid: number; gid: number },
  argv: readonly string[],
  options: SpawnOptions,
): Promise<PolicyProxy> {
  // Bounded: a command that loops on a refused connection must not flood the gateway's log.
  const warnings = new DenialWarnings({ command: argv[0], expected: options.expectViolations });
  return startPolicyProxy({
    allowDomains: policy.allowDomains,
    resolve: options.proxy?.resolve,
    allowPrivateAddresses: options.proxy?.allowPrivateAddresses,
    anyPublic: policy.network === "public",
    publicForTests: options.proxy?.publicAddresses,
    neverDial: policy.proxyNeverDial,
    maxConnections: policy.proxyMaxConnections,
    socketOwner: (process.getuid?.() ?? 0) === 0 ? ids : undefined,
    onDenied: (denial) => warnings.denied(denial),
    onClosed: () => warnings.end(),
    onCapReached: (maxConnections) =>
      log.warn(
        "sandbox.limit.proxy_connections {command}: {maxConnections} proxy connections open; " +
          "refusing more",
        { command: argv[0], maxConnections },
      ),
  });
}
