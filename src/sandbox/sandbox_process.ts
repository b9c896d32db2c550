/**
 * `SandboxProcess` and `SandboxStatus`: a running sandboxed command as its caller holds it, and
 * how it ended.
 * @module
 */
import type net from "node:net";
import type { DiskQuotaReport } from "./disk_quota.ts";
import type { Trampoline } from "./ffi.ts";
import type { AppliedLimits } from "./limits.ts";
import type { ProxyDenial } from "./proxy/policy_proxy.ts";
import type { SandboxCpuTime } from "./reaper.ts";
import type { SandboxTerminal } from "./terminal.ts";
import type { SignalName } from "./wait_status.ts";

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
  /** The command's terminal, when started with `terminal`; else null. */
  readonly terminal: SandboxTerminal | null;
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
