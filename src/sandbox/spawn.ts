/**
 * `spawnSandboxed()`: starts one command in a fresh sandbox and streams its output.
 *
 * Pipes are read with `node:net` sockets (epoll, no thread), never with blocking FFI calls,
 * which would occupy Deno's small blocking-thread pool; the init is reaped through a SIGCHLD
 * listener (reaper.ts) and killed through its pidfd — SIGKILL to pid 1 ends the whole pid
 * namespace, so nothing the command started survives it.
 * @module
 */
import { realpathSync } from "node:fs";
import net from "node:net";
import process from "node:process";
import { getLogger } from "@logtape/logtape";
import { type CgroupHost, cgroupHost } from "./cgroup_host.ts";
import type { SandboxCgroup } from "./cgroup_files.ts";
import { sandboxCgroup } from "./sandbox_cgroup.ts";
import { type DiskQuotaReport, DiskQuotaWatch } from "./disk_quota.ts";
import { timeoutProblem } from "./duration.ts";
import { SandboxPolicyError, SandboxSetupError } from "./errors.ts";
import { assertHostIdsFree } from "./host_ids.ts";
import { loadTrampoline, OUT, PARAM, type Trampoline } from "./ffi.ts";
import { type AppliedLimits, planLimits } from "./limits.ts";
import { resolvePolicy, type SandboxPolicy, type SandboxPolicyInput } from "./policy.ts";
import { END_SIGNAL, type StepName } from "./protocol.ts";
import { startSandbox } from "./prestart.ts";
import { protectedPathsOffLoop } from "./protected_paths.ts";
import { type SandboxCpuTime, waitForExit } from "./reaper.ts";
import { readReport } from "./report.ts";
import { setupFailure } from "./setup_failure.ts";
import { type PolicyProxy, type ProxyDenial, startPolicyProxy } from "./proxy/policy_proxy.ts";
import type { Resolver } from "./proxy/proxy_decision.ts";
import { buildSpec } from "./spec.ts";
import { prepareRootfs } from "./rootfs.ts";
import { decodeWaitStatus, type SignalName, signalNumber } from "./wait_status.ts";

export type { SandboxCpuTime };

const log = getLogger(["coop", "sandbox"]);

/** How long the init may take to end its sandbox when asked before it is killed outright. */
const END_GRACE_MS = 2000;

/** Options for one sandboxed command. */
export interface SpawnOptions {
  /** Extra environment variables (added to the allowlisted base). */
  env?: Record<string, string>;
  /** Working directory inside the sandbox: `/work` or a path below it (default `/work`). */
  cwd?: string;
  /** Give the command a stdin pipe; otherwise it reads EOF. */
  stdin?: boolean;
  /** Fail this setup step on purpose (tests of the error path). */
  failAt?: StepName;
  /** Wall-clock limit: the whole sandbox is killed when it passes (`timedOut` in the status). */
  timeoutMs?: number;
  /**
   * Test hooks of network "proxy": a resolver the test controls, and permission to dial
   * loopback and private addresses (test servers on the host's loopback). Production — the
   * gateway and the CLI — never sets them.
   */
  proxy?: ProxyTestHooks;
  /** Test hook: plan the limits against this stand-in host instead of this one's cgroups. */
  cgroupHost?: CgroupHost;
  /** Proxy denials are expected (a probe): logged at debug level, not as warnings. */
  expectViolations?: boolean;
}

/** See `SpawnOptions.proxy`: for tests only. */
export interface ProxyTestHooks {
  /** Resolves names instead of the host's DNS. */
  resolve?: Resolver;
  /** Lets the proxy dial loopback and private addresses (a loopback test server). */
  allowPrivateAddresses?: boolean;
  /** Addresses treated as public unicast (network "public" tests: loopback servers). */
  publicAddresses?: readonly string[];
}

/** How a sandboxed command ended. */
export interface SandboxStatus {
  /** The command's exit code; `128 + n` when killed by signal n; 127/126 when not executable. */
  exitCode: number;
  /** The signal that killed the command (or the whole sandbox), e.g. `SIGKILL`. */
  signal: string | null;
  /** Set when the command could not be executed: the errno of execve (ENOENT → 127). */
  execErrno: number | null;
  /** What the init reported having applied: Landlock ABI in force (0: none), seccomp on. */
  hardening: { landlockAbi: number; seccomp: boolean };
  /** True when `timeoutMs` passed and the sandbox was killed. */
  timedOut: boolean;
  /** True when the kernel's OOM killer killed a process of this sandbox (cgroup paths). */
  oomKilled: boolean;
  /** True when a fork failed at the pids limit; null where the path cannot tell (rlimit). */
  pidsLimitHit: boolean | null;
  /** The resource limits applied, and by which path. */
  limits: AppliedLimits;
  /** CPU time the sandbox used; see `ExecResult.cpu`. */
  cpu: SandboxCpuTime;
  /** The workspace's disk/inode quota and usage (null without a quota). */
  disk: DiskQuotaReport | null;
  /** Requests the policy proxy refused (network "proxy"; empty otherwise). */
  proxyDenials: ProxyDenial[];
  /** Connections the proxy refused because `proxyMaxConnections` were open (0 otherwise). */
  proxyRefusedConnections: number;
}

/** A running sandboxed command. */
export interface SandboxProcess {
  /** Host pid of the sandbox's init (pid 1 inside). */
  readonly pid: number;
  /** The command's stdin, when requested. */
  readonly stdin: net.Socket | null;
  /** The command's stdout (raw bytes). */
  readonly stdout: net.Socket;
  /** The command's stderr (raw bytes). */
  readonly stderr: net.Socket;
  /**
   * Settles once the sandbox is gone; rejects with SandboxSetupError if setup failed. Output
   * still in the pipes may be read after it settles: wait for `stdout`'s `close` for all of it
   * (`exec()` does).
   */
  readonly status: Promise<SandboxStatus>;
  /** Signals the command (forwarded by the init); `SIGKILL` ends the whole sandbox. */
  kill(signal?: SignalName): void;
  /** The pipe fds behind stdout/stderr (owned by those sockets), for exec()'s drain. */
  readonly fds: { stdout: number; stderr: number };
  /**
   * The trampoline the process was started with (exec()'s drain).
   * @ignore
   */
  readonly lib: Trampoline;
  /** The resource limits applied, and by which path. */
  readonly limits: AppliedLimits;
}

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
function logSetupFailure(error: SandboxSetupError, argv: readonly string[]): SandboxSetupError {
  log.info("sandbox.setup_failed {step} {errno}", { step: error.step, errno: error.errno, argv });
  return error;
}

/**
 * Starts `argv` in a new sandbox under `policy`.
 *
 * @example
 * ```ts
 * const child = await spawnSandboxed({ workspace: "/tmp/ws" }, ["sh", "-c", "echo hi"]);
 * child.stdout.on("data", (chunk) => console.log(String(chunk)));
 * console.log((await child.status).exitCode);
 * ```
 */
export async function spawnSandboxed(
  policyInput: SandboxPolicyInput | SandboxPolicy,
  argv: readonly string[],
  options: SpawnOptions = {},
): Promise<SandboxProcess> {
  const policy = resolvePolicy(policyInput);
  // A timer past its ceiling fires at once: the command would be killed before it ran.
  const badTimeout = options.timeoutMs === undefined ? null : timeoutProblem(options.timeoutMs);
  if (badTimeout) throw new SandboxPolicyError(`timeoutMs ${badTimeout}`);
  const workspace = canonicalWorkspace(policy.workspace);
  // A directory root is opened refusing every symlink (ffi/init/rootfs.c), as the workspace.
  const rootfs = policy.rootfs && "directory" in policy.rootfs
    ? { directory: canonicalWorkspace(policy.rootfs.directory) }
    : policy.rootfs;
  return await spawnWorkspaceAsGiven({ ...policy, workspace, rootfs }, argv, options);
}

/**
 * The workspace with its parent directories resolved once, the last component kept as given.
 *
 * The parents are the owner's (a workspace root under a symlinked home keeps working); the
 * last component may be a directory another sandbox can replace (a shared workspace holds the
 * per-user ones), so it is never resolved here — resolving it would hand the C side a
 * symlink's target, e.g. `/etc`. The C side then opens the result refusing every symlink
 * (ffi/workspace.h), so a swap after this point fails setup closed with ELOOP.
 *
 * @example
 * ```ts
 * canonicalWorkspace("/home/me/ws/bob"); // "/var/home/me/ws/bob" when /home → /var/home
 * ```
 */
export function canonicalWorkspace(path: string): string {
  const trimmed = path.replace(/\/+$/, "") || "/";
  const slash = trimmed.lastIndexOf("/");
  const name = trimmed.slice(slash + 1);
  if (name === "" || name === "." || name === "..") return realPathOrAsIs(trimmed);
  const parent = realPathOrAsIs(trimmed.slice(0, slash) || "/");
  return parent === "/" ? `/${name}` : `${parent}/${name}`;
}

/** A path that cannot be resolved stays as given: setup then names the cause (ENOENT, …). */
function realPathOrAsIs(path: string): string {
  // Sync on purpose: async file calls run on Deno's blocking thread pool, which grows and
  // lingers (tests/sandbox/lifecycle_test.ts counts threads); this is a few cached lookups.
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Like `spawnSandboxed`, but opens `policy.workspace` exactly as given: a symlink anywhere in
 * it fails setup at "mount-workspace" with ELOOP. For tests of that refusal.
 */
export async function spawnWorkspaceAsGiven(
  policy: SandboxPolicy,
  argv: readonly string[],
  options: SpawnOptions = {},
): Promise<SandboxProcess> {
  const lib = await loadTrampoline();
  // Over quota: refused before anything starts; under it, each file is bounded by what is left.
  const quota = await DiskQuotaWatch.before(policy);
  const limited = quota ? { ...policy, fileSizeBytes: quota.fileSizeBytes } : policy;
  const limits = planLimits(limited, options.cgroupHost ?? cgroupHost());
  const ids = outerIds(policy);
  prepareRootfs(policy, ids, ids.idmapped);
  // Off the event loop, and before anything is started: a workspace too large to check fails
  // here, closed (ATTACKS R12).
  const protectedPaths = await protectedPathsOffLoop(
    policy.workspace,
    policy.protectedNames,
    policy.scanLimit,
  );
  const proxied = policy.network === "proxy" || policy.network === "public";
  const proxy = proxied ? await startProxy(policy, ids, argv, options) : null;
  let spec: Uint8Array;
  try {
    spec = buildSpec(policy, argv, {
      env: options.env,
      cwd: options.cwd,
      failAt: options.failAt,
      rlimits: limits.rlimits,
      proxy: proxy ?? undefined,
      protectedPaths,
    });
  } catch (error) {
    await proxy?.close();
    throw error;
  }
  const shape = { newNet: policy.network !== "host", uid: ids.uid, gid: ids.gid };
  const params = new Int32Array(PARAM.count);
  params[PARAM.wantStdin] = options.stdin ? 1 : 0;
  const idmap = ids.idmapped ? new TextEncoder().encode(`${policy.workspace}\0`) : null;
  const cgroup = sandboxCgroup(limits);
  const attach = cgroup ? cgroup.attachList() : null;
  let out: Int32Array;
  try {
    out = startSandbox(
      lib,
      shape,
      (started) => lib.coop_start(spec, BigInt(spec.length), params, idmap, attach, started),
    );
  } catch (error) {
    await cgroup?.destroy();
    await proxy?.close();
    if (error instanceof SandboxSetupError) logSetupFailure(error, argv);
    throw error;
  }
  return track(lib, out, argv, options.timeoutMs, limits.applied, cgroup, proxy, quota);
}

/** One policy proxy per sandbox; its socket belongs to the sandbox's outer ids. */
function startProxy(
  policy: SandboxPolicy,
  ids: { uid: number; gid: number },
  argv: readonly string[],
  options: SpawnOptions,
): Promise<PolicyProxy> {
  return startPolicyProxy({
    allowDomains: policy.allowDomains,
    resolve: options.proxy?.resolve,
    allowPrivateAddresses: options.proxy?.allowPrivateAddresses,
    anyPublic: policy.network === "public",
    publicForTests: options.proxy?.publicAddresses,
    neverDial: policy.proxyNeverDial,
    maxConnections: policy.proxyMaxConnections,
    socketOwner: (process.getuid?.() ?? 0) === 0 ? ids : undefined,
    onDenied: (denial) => {
      const message = "sandbox.proxy_denied {command}: {host}:{port} {reason}";
      const fields = { command: argv[0], ...denial };
      if (options.expectViolations) log.debug(message, fields);
      else log.warn(message, fields);
    },
    onCapReached: (maxConnections) =>
      log.warn(
        "sandbox.limit.proxy_connections {command}: {maxConnections} proxy connections open; " +
          "refusing more",
        { command: argv[0], maxConnections },
      ),
  });
}

function track(
  lib: Trampoline,
  out: Int32Array,
  argv: readonly string[],
  timeoutMs: number | undefined,
  limits: AppliedLimits,
  cgroup: SandboxCgroup | null,
  proxy: PolicyProxy | null,
  quota: DiskQuotaWatch | null,
): SandboxProcess {
  const pid = out[OUT.pid], pidfd = out[OUT.pidfd];
  const socket = (fd: number, writable: boolean) =>
    new net.Socket({ fd, readable: !writable, writable });
  const stdin = out[OUT.stdin] >= 0 ? socket(out[OUT.stdin], true) : null;
  stdin?.on("error", () => {}); // EPIPE when the command does not read its input
  const stdout = socket(out[OUT.stdout], false);
  const stderr = socket(out[OUT.stderr], false);
  let alive = true, timedOut = false;
  let force: ReturnType<typeof setTimeout> | undefined;
  // The pidfd stays valid until we close it after reaping, so no pid-reuse race.
  const end = () => {
    if (!alive || force !== undefined) return;
    // The init kills the command, then everything else, and reaps them all — so their CPU time
    // is counted — before it exits. SIGKILL to the init follows if it has not gone by then (a
    // process stuck in the kernel, an init still in setup); that ends the pid namespace anyway.
    lib.coop_kill(pidfd, END_SIGNAL);
    // The pidfd stays valid until we close it after reaping, so no pid-reuse race; on the
    // cgroup v2 path `cgroup.kill` ends whatever is left in the sandbox's cgroup as well.
    force = setTimeout(() => {
      if (alive) lib.coop_kill(pidfd, signalNumber("SIGKILL"));
      cgroup?.kill();
    }, END_GRACE_MS);
  };
  const timer = timeoutMs === undefined ? undefined : setTimeout(() => {
    timedOut = true;
    end();
  }, timeoutMs);

  const status = waitForExit(lib, pid).then(async ({ status: waitStatus, cpu }) => {
    const rep = readReport(lib, out[OUT.report]);
    alive = false;
    clearTimeout(timer);
    clearTimeout(force);
    lib.coop_close(pidfd);
    lib.coop_close(out[OUT.go]);
    const violations = cgroup ? cgroup.violations() : { oomKilled: false, pidsLimitHit: null };
    await cgroup?.destroy();
    const disk = quota ? await quota.finish() : null;
    await proxy?.close();
    if (rep.setupError) {
      throw logSetupFailure(setupFailure(rep.setupError.step, rep.setupError.errno), argv);
    }
    const decoded = decodeWaitStatus(rep.commandStatus ?? waitStatus);
    return {
      ...decoded,
      execErrno: rep.execErrno ?? null,
      hardening: rep.ready ?? { landlockAbi: 0, seccomp: false },
      timedOut,
      ...violations,
      limits,
      cpu: { ...cpu, measuredBy: "rusage" as const },
      disk,
      proxyDenials: [...(proxy?.denials ?? [])],
      proxyRefusedConnections: proxy?.refusedConnections ?? 0,
    };
  });

  const child: SandboxProcess = {
    pid,
    lib,
    limits,
    fds: { stdout: out[OUT.stdout], stderr: out[OUT.stderr] },
    stdin,
    stdout,
    stderr,
    status,
    kill(signal: SignalName = "SIGKILL") {
      if (signal === "SIGKILL") end();
      else if (alive) lib.coop_kill(pidfd, signalNumber(signal));
    },
  };
  quota?.watch(() => child.kill("SIGKILL"));
  return child;
}
