/**
 * `startSession()`: one sandbox kept alive between commands (a chat session's), whose init
 * runs each command it is sent (ffi/init/session.c). Every command gets its own output, exit
 * status, timeout and rlimits; the sandbox's world — root, Landlock, seccomp, network, cgroup
 * limits — is built once. Processes a command leaves in the background run until the session
 * ends: `stop()`, the init killed, or the gateway gone (the init's parent-death signal and the
 * go socket closing both end it, and SIGKILL to pid 1 ends its whole pid namespace).
 * @module
 */
import net from "node:net";
import { Buffer } from "node:buffer";
import { getLogger } from "@logtape/logtape";
import { ERRNO, errnoName, errnoText } from "./errno.ts";
import { SandboxPolicyError } from "./errors.ts";
import { DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_TIMEOUT_MS, type ExecResult } from "./exec.ts";
import { OUT } from "./ffi.ts";
import { resolvePolicy, type SandboxPolicy, type SandboxPolicyInput } from "./policy.ts";
import { END_SIGNAL, RECORD, RECORD_SIZE } from "./protocol.ts";
import { sandboxCpuTime, waitForExit } from "./reaper.ts";
import { sessionCapture } from "./session_capture.ts";
import { setupFailure } from "./setup_failure.ts";
import { buildCommandSpec } from "./spec.ts";
import { canonicalWorkspace } from "./spawn.ts";
import {
  type SessionCpuTime,
  SessionEndedError,
  type SessionExecOptions,
  type SessionOptions,
  SessionOutdatedError,
  type SessionSandbox,
} from "./session_types.ts";
import { protectedPathsOffLoop } from "./protected_paths.ts";
import { logSetupFailure, type StartedInit, startInit } from "./start_init.ts";
import { timeoutProblem } from "./duration.ts";
import { decodeWaitStatus, signalNumber } from "./wait_status.ts";
import { syncUpperInBackground } from "./upper_sync.ts";

export {
  type SessionCpuTime,
  SessionEndedError,
  type SessionExecOptions,
  type SessionOptions,
  SessionOutdatedError,
  type SessionSandbox,
} from "./session_types.ts";

const log = getLogger(["coop", "sandbox", "session"]);

/** How long the init may take to answer a kill before the whole session is ended. */
const KILL_GRACE_MS = 2000;

interface Pending {
  utimeMs: number;
  stimeMs: number;
  refused: number | null;
  ended: (status: number) => void;
}

/**
 * Starts a session sandbox under `policy`; resolves once its world is built and it waits for
 * commands. Rejects with SandboxSetupError when it cannot be built.
 *
 * @example
 * ```ts
 * const session = await startSession({ workspace: "/tmp/ws", network: "none" });
 * await session.exec(["sh", "-c", "sleep 100 &"]);
 * (await session.exec(["sh", "-c", "pgrep sleep"])).exitCode; // 0
 * await session.stop();
 * ```
 */
export async function startSession(
  policyInput: SandboxPolicyInput | SandboxPolicy,
  options: SessionOptions = {},
): Promise<SessionSandbox> {
  const resolved = resolvePolicy(policyInput);
  const policy = { ...resolved, workspace: canonicalWorkspace(resolved.workspace) };
  const argv = ["coop-session"];
  const init = await startInit(policy, argv, options, true);
  const { lib, out } = init;
  // The setup's stdio: the init closes its copies once it serves commands.
  lib.coop_close(out[OUT.stdout]), lib.coop_close(out[OUT.stderr]);
  if (out[OUT.stdin] >= 0) lib.coop_close(out[OUT.stdin]);
  const pending = new Map<number, Pending>();
  let ready!: (hardening: ExecResult["hardening"]) => void;
  let failed!: (error: Error) => void;
  const readyPromise = new Promise<ExecResult["hardening"]>((res, rej) => {
    ready = res, failed = rej;
  });
  let setupError: { step: number; errno: number } | null = null;
  const report = new net.Socket({ fd: out[OUT.report], readable: true, writable: false });
  let rest = Buffer.alloc(0);
  // What the commands' own results reported; the rest of the init's rusage is unclaimed.
  const claimed: SessionCpuTime = { userMs: 0, systemMs: 0 };
  report.on("data", (chunk: Buffer) => {
    rest = Buffer.concat([rest, chunk]);
    for (; rest.length >= RECORD_SIZE; rest = rest.subarray(RECORD_SIZE)) {
      const kind = rest.readInt32LE(0), a = rest.readInt32LE(4), b = rest.readInt32LE(8);
      const command = pending.get(a);
      if (kind === RECORD.ready) ready({ landlockAbi: a, seccomp: b === 1 });
      else if (kind === RECORD.error) setupError ??= { step: a, errno: b };
      else if (kind === RECORD.utime && command) command.utimeMs = b, claimed.userMs += b;
      else if (kind === RECORD.stime && command) command.stimeMs = b, claimed.systemMs += b;
      else if (kind === RECORD.refused && command) command.refused = b;
      else if (kind === RECORD.ended && command) {
        command.ended(b);
        syncUpperInBackground(init.upper);
      }
    }
  });
  report.on("error", () => {});
  let alive = true;
  let unclaimed!: (cpu: SessionCpuTime) => void;
  const unclaimedCpu = new Promise<SessionCpuTime>((resolve) => unclaimed = resolve);
  const ended = waitForExit(lib, out[OUT.pid]).then(async ({ cpu: rusage }) => {
    alive = false;
    // The init's rusage holds every process it reaped (ffi/init/session.c reaps orphans too,
    // and the kernel reaps what is left when pid 1 dies) — its cgroup's count also those reaped
    // without accounting (a parent that ignored SIGCHLD): what the commands' records reported
    // is charged with their results (a record still unread now is in neither).
    const cpu = sandboxCpuTime(rusage, init.cgroup?.cpuTime() ?? null);
    unclaimed({
      userMs: Math.max(0, cpu.userMs - claimed.userMs),
      systemMs: Math.max(0, cpu.systemMs - claimed.systemMs),
    });
    report.destroy();
    lib.coop_close(out[OUT.pidfd]);
    try {
      init.overlay?.settle(out[OUT.go], setupError !== null);
    } finally {
      lib.coop_close(out[OUT.go]);
      syncUpperInBackground(init.upper);
      init.upperLock?.release();
      // Commands still running ended with the sandbox: their process was killed.
      for (const command of pending.values()) command.ended(signalNumber("SIGKILL"));
    }
    // Each alone: one that fails must neither skip the others nor reject `ended`, which stop()
    // and timers await (an unhandled rejection would end the gateway).
    const cleanups = [
      ["cgroup", () => init.cgroup?.destroy()],
      ["quota", () => init.quota?.finish()],
      ["proxy", () => init.proxy?.close()],
    ] as const;
    for (const [what, cleanup] of cleanups) {
      try {
        await cleanup();
      } catch (error) {
        log.warn("sandbox.session.cleanup_failed {what} {pid}: {error}", {
          what,
          pid: out[OUT.pid],
          error: error instanceof Error ? error.message : String(error),
        });
      }
    }
    failed(
      setupError
        ? logSetupFailure(setupFailure(setupError.step, setupError.errno), argv)
        : new SessionEndedError("the session sandbox ended before it was ready"),
    );
    log.debug("sandbox.session.ended {pid}", { pid: out[OUT.pid] });
  });
  const hardening = await readyPromise;
  const session = new LiveSession(
    init,
    policy,
    hardening,
    pending,
    ended,
    unclaimedCpu,
    claimed,
    () => alive,
  );
  init.quota?.watch(() => void session.stop());
  return session;
}

class LiveSession implements SessionSandbox {
  readonly pid: number;
  readonly startedAt = Date.now();
  #nextId = 1;
  #stopping = false;

  constructor(
    private readonly init: StartedInit,
    private readonly policy: SandboxPolicy,
    private readonly hardening: ExecResult["hardening"],
    private readonly pending: Map<number, Pending>,
    readonly ended: Promise<void>,
    readonly unclaimedCpu: Promise<SessionCpuTime>,
    private readonly claimed: Readonly<SessionCpuTime>,
    private readonly isAlive: () => boolean,
  ) {
    this.pid = init.out[OUT.pid];
  }

  get alive(): boolean {
    return this.isAlive();
  }

  unclaimedCpuSoFar(): SessionCpuTime | null {
    const counted = this.alive ? this.init.cgroup?.cpuTime() ?? null : null;
    if (!counted) return null;
    return {
      userMs: Math.max(0, counted.userMs - this.claimed.userMs),
      systemMs: Math.max(0, counted.systemMs - this.claimed.systemMs),
    };
  }

  stop(): Promise<void> {
    if (!this.alive || this.#stopping) return this.ended;
    this.#stopping = true;
    const { lib, out } = this.init;
    // The init kills every process of the session and reaps it, so their CPU time is in its
    // rusage (`unclaimedCpu`); SIGKILL alone would leave them to the pid namespace's teardown,
    // which reaps without accounting. SIGKILL follows if the init has not gone by then.
    lib.coop_kill(out[OUT.pidfd], END_SIGNAL);
    const force = setTimeout(() => {
      if (this.alive) lib.coop_kill(out[OUT.pidfd], signalNumber("SIGKILL"));
    }, KILL_GRACE_MS);
    void this.ended.then(() => clearTimeout(force));
    return this.ended;
  }

  async exec(argv: readonly string[], options: SessionExecOptions = {}): Promise<ExecResult> {
    const { lib, out, proxy } = this.init;
    const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const badTimeout = timeoutProblem(timeoutMs);
    if (badTimeout) throw new SandboxPolicyError(`timeoutMs ${badTimeout}`);
    const limit = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    if (!Number.isFinite(limit) || limit <= 0) {
      throw new SandboxPolicyError(`maxOutputBytes must be a positive number, got ${limit}`);
    }
    options.signal?.throwIfAborted();
    if (!this.alive) throw new SessionEndedError("the session sandbox has ended");
    // A `.git` made since the start (a clone by the last command, the owner's) would be writable
    // here, where a fresh sandbox keeps it read-only (ATTACKS F5): refuse, fail closed.
    const protectedNow = await protectedPathsOffLoop(
      this.policy.workspace,
      this.policy.protectedNames,
      this.policy.scanLimit,
    );
    const unprotected = protectedNow.filter((path) => !this.init.protectedPaths.includes(path));
    if (unprotected.length > 0) throw new SessionOutdatedError(unprotected);
    if (!this.alive) throw new SessionEndedError("the session sandbox has ended");
    // Cancelled while the scan ran: the abort listener below comes too late to see it.
    options.signal?.throwIfAborted();
    const spec = buildCommandSpec(this.policy, argv, {
      env: options.env,
      cwd: options.cwd,
      rlimits: this.init.rlimits,
      proxy: proxy ?? undefined,
    });
    const id = this.#nextId++;
    const started = performance.now();
    const denialsBefore = proxy?.denialCount ?? 0;
    const refusedBefore = proxy?.refusedConnections ?? 0;
    const violationsBefore = this.init.cgroup?.violations();
    const fds = new Int32Array(3);
    const wantStdin = options.stdin !== undefined ? 1 : 0;
    const sent = lib.coop_session_run(out[OUT.go], id, spec, BigInt(spec.length), wantStdin, fds);
    if (sent < 0) {
      throw new SessionEndedError(
        `the session sandbox did not take the command (${errnoName(-sent)})`,
      );
    }
    const command: Pending = { utimeMs: 0, stimeMs: 0, refused: null, ended: () => {} };
    const status = new Promise<number>((resolve) => command.ended = resolve);
    this.pending.set(id, command);
    if (fds[0] >= 0) {
      const stdin = new net.Socket({ fd: fds[0], readable: false, writable: true });
      stdin.on("error", () => {}); // EPIPE when the command does not read its input
      stdin.end(options.stdin ?? "");
    }
    const stdout = sessionCapture(lib, fds[1], limit);
    const stderr = sessionCapture(lib, fds[2], limit);
    let timedOut = false;
    let force: ReturnType<typeof setTimeout> | undefined;
    const kill = () => {
      if (force !== undefined) return;
      lib.coop_session_signal(out[OUT.go], id, signalNumber("SIGKILL"));
      // An init that does not answer is not trusted with the session any longer.
      force = setTimeout(() => {
        log.warn("sandbox.session.unresponsive {pid}: ending the session", { pid: this.pid });
        void this.stop();
      }, KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, timeoutMs);
    options.signal?.addEventListener("abort", kill, { once: true });
    let waitStatus: number;
    try {
      waitStatus = await status;
    } finally {
      clearTimeout(timer);
      clearTimeout(force);
      options.signal?.removeEventListener("abort", kill);
      this.pending.delete(id);
    }
    stdout.end(), stderr.end();
    const [outBytes, errBytes] = await Promise.all([stdout.done, stderr.done]);
    const decoder = new TextDecoder();
    let stderrText = decoder.decode(errBytes.bytes);
    if (command.refused !== null) {
      const what = command.refused === ERRNO.ENOENT
        ? "command not found"
        : command.refused === ERRNO.ENOEXEC
        ? "not a program this system runs (a script needs a #! line)"
        : errnoText(command.refused);
      stderrText += `coop: ${argv[0]}: ${what} (${errnoName(command.refused)})\n`;
    }
    const after = this.init.cgroup?.violations();
    const denied = (proxy?.denialCount ?? 0) - denialsBefore;
    const result: ExecResult = {
      ...decodeWaitStatus(waitStatus),
      timedOut,
      stdout: decoder.decode(outBytes.bytes),
      stderr: stderrText,
      truncated: outBytes.truncated || errBytes.truncated,
      durationMs: Math.round((performance.now() - started) * 100) / 100,
      hardening: this.hardening,
      oomKilled: !!after?.oomKilled && !violationsBefore?.oomKilled,
      pidsLimitHit: after ? !!after.pidsLimitHit && !violationsBefore?.pidsLimitHit : null,
      limits: this.init.limits,
      cpu: { userMs: command.utimeMs, systemMs: command.stimeMs, measuredBy: "rusage" },
      disk: null,
      // This command's, the latest of them if more than the proxy keeps.
      proxyDenials: denied > 0 ? proxy!.denials.slice(-denied) : [],
      proxyRefusedConnections: (proxy?.refusedConnections ?? 0) - refusedBefore,
    };
    log.debug("sandbox.session.exec {command} exit={exitCode} {durationMs}ms", {
      command: argv[0],
      pid: this.pid,
      exitCode: result.exitCode,
      signal: result.signal,
      timedOut,
      durationMs: result.durationMs,
    });
    return result;
  }
}
