/**
 * Coop's sandbox library: run a command in a sandbox made directly from Linux kernel primitives
 * (user, mount, pid, network and other namespaces, `pivot_root`, Landlock, seccomp, cgroups or
 * rlimits), measure what the kernel enforces, and attack it from inside.
 *
 * This is the public API; everything else under `src/` is Coop's own and may change. The gateway
 * (trust, channels, the agent) is the `coop` program, not a library.
 *
 * @example
 * ```ts
 * import { exec } from "./mod.ts";
 * const r = await exec({ workspace: "/tmp/ws" }, ["sh", "-c", "echo hello"], { timeoutMs: 5000 });
 * console.log(r.exitCode, r.stdout); // 0 "hello\n"
 * ```
 * @module
 */
export { exec } from "./src/sandbox/exec.ts";
export type { ExecOptions, ExecResult } from "./src/sandbox/exec.ts";
export type { SandboxCpuTime } from "./src/sandbox/spawn.ts";
export { spawn } from "./src/sandbox/public_spawn.ts";
export type { RunningSandbox, SpawnSandboxOptions } from "./src/sandbox/public_spawn.ts";
export type { SandboxTerminal, TerminalSize } from "./src/sandbox/terminal.ts";
export type { SandboxStatus } from "./src/sandbox/spawn.ts";
export { SessionEndedError, startSession } from "./src/sandbox/session.ts";
export { SandboxUpperInUseError } from "./src/sandbox/upper_lock.ts";
export { environmentWritesSettled } from "./src/sandbox/upper_sync.ts";
export type {
  SessionCpuTime,
  SessionExecOptions,
  SessionOptions,
  SessionSandbox,
} from "./src/sandbox/session.ts";
export { probe } from "./src/sandbox/probe.ts";
export type { ProbeCheck, ProbeOptions, ProbeReport } from "./src/sandbox/probe.ts";
export { lastSelfTest, selfTest } from "./src/sandbox/self_test.ts";
export type { SelfTestCheck, SelfTestResult } from "./src/sandbox/self_test.ts";
export { NETWORK_MODES, resolvePolicy } from "./src/sandbox/policy.ts";
export type { NetworkMode, SandboxPolicy, SandboxPolicyInput } from "./src/sandbox/policy.ts";
export type { PersistBind, RootfsPolicy } from "./src/sandbox/rootfs_policy.ts";
export type { AppliedLimits, LimitPath } from "./src/sandbox/limits.ts";
export type { DiskQuotaReport } from "./src/sandbox/disk_quota.ts";
export type { WorkspaceUsage } from "./src/sandbox/workspace_usage.ts";
export type { ProxyDenial } from "./src/sandbox/proxy/policy_proxy.ts";
export type { SignalName } from "./src/sandbox/wait_status.ts";
export {
  SandboxError,
  SandboxLimitError,
  SandboxPolicyError,
  SandboxQuotaError,
  SandboxSetupError,
  SandboxUnavailableError,
  SandboxWorkspaceError,
} from "./src/sandbox/errors.ts";
export { STEPS } from "./src/sandbox/protocol.ts";
export { SandboxHostIdError } from "./src/sandbox/host_ids.ts";
export type { StepName } from "./src/sandbox/protocol.ts";
