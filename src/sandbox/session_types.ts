/**
 * The types of `startSession()` (session.ts): its options, a command's options, the live
 * session a caller holds, and the error of a command sent to a session that has ended.
 * @module
 */
import { SandboxError } from "./errors.ts";
import type { ExecResult } from "./exec.ts";
import type { CgroupHost } from "./cgroup_host.ts";
import type { StepName } from "./protocol.ts";
import type { ProxyTestHooks } from "./spawn.ts";

/** Options for `startSession()`. */
export interface SessionOptions {
  /**
   * Fail this setup step on purpose (tests of the error path).
   * @ignore
   */
  failAt?: StepName;
  /**
   * Test hooks of network "proxy"; production never sets them.
   * @ignore
   */
  proxy?: ProxyTestHooks;
  /**
   * Test hook: plan the limits against this stand-in host.
   * @ignore
   */
  cgroupHost?: CgroupHost;
}

/** Options for one command of a session. */
export interface SessionExecOptions {
  /** Wall-clock limit for this command; its process group is killed when it passes. */
  timeoutMs?: number;
  /** Bytes written to the command's stdin (then closed). Default: empty stdin. */
  stdin?: string | Uint8Array;
  /** Extra environment variables for this command. */
  env?: Record<string, string>;
  /** Working directory inside the sandbox: `/work` or a path below it. */
  cwd?: string;
  /** Cap on each of stdout and stderr. Default 1 MiB. */
  maxOutputBytes?: number;
  /** Kills the command's process group when aborted. */
  signal?: AbortSignal;
}

/** A live session sandbox. */
export interface SessionSandbox {
  /** Host pid of the session's init (pid 1 inside). */
  readonly pid: number;
  /** When the session was started (epoch ms). */
  readonly startedAt: number;
  /** Settles once the session has ended (stopped, killed, or its init died). */
  readonly ended: Promise<void>;
  /**
   * Settles once the session has ended with the CPU time no command's result reported:
   * processes left in the background (reaped by the init as orphans, or killed at the end),
   * commands still running when it ended, and the init itself — so that everything the
   * session ran is counted once (the init's `wait4` rusage less what the commands reported).
   */
  readonly unclaimedCpu: Promise<SessionCpuTime>;
  /**
   * The CPU time no command's result has reported so far, as the session's cgroup counts it
   * (what runs in the background, the init, and what a command still running has used), while
   * the session runs; null where no cgroup counts CPU (the rlimit path, a cgroup v1 hierarchy
   * without `cpuacct`) — there it is known only once the session has ended (`unclaimedCpu`).
   */
  unclaimedCpuSoFar(): SessionCpuTime | null;
  /** Whether the session still runs. */
  readonly alive: boolean;
  /** Runs `argv` in the session and waits for it (not for what it left in the background). */
  exec(argv: readonly string[], options?: SessionExecOptions): Promise<ExecResult>;
  /** Ends the session: every process in it is killed. Resolves once it is gone. */
  stop(): Promise<void>;
}

/** CPU time in milliseconds, measured by the kernel (rusage). */
export interface SessionCpuTime {
  /** Time in user mode. */
  userMs: number;
  /** Time in the kernel on the session's behalf. */
  systemMs: number;
}

/**
 * A command of a session was refused because a protected path (`.git`, …) appeared in the
 * workspace after the session started: its init keeps read-only only what existed then, and
 * nothing can be mounted into a running sandbox. Stop the session and start a new one (the
 * gateway does, before the command runs).
 */
export class SessionOutdatedError extends SandboxError {
  /** The protected paths (relative to the workspace) the session does not keep read-only. */
  readonly paths: readonly string[];
  constructor(paths: readonly string[]) {
    super(
      "sandbox.session_outdated",
      `${paths.join(", ")} appeared after the session sandbox started, which keeps read-only ` +
        "only what existed then; the command was not run — start a new session",
    );
    this.name = "SessionOutdatedError";
    this.paths = paths;
  }
}

/** A command of a session was refused because the session is over. */
export class SessionEndedError extends SandboxError {
  /** `message` says what ended it. */
  constructor(message: string) {
    super("sandbox.session_ended", message);
    this.name = "SessionEndedError";
  }
}
