/**
 * The Linux sandbox library: run a command in a sandbox made from kernel primitives.
 * Imports nothing from the gateway; usable alone.
 *
 * @example
 * ```ts
 * import { exec } from "./mod.ts";
 * const result = await exec({ workspace: "/tmp/ws" }, ["sh", "-c", "echo hello"]);
 * console.log(result.exitCode, result.stdout);
 * ```
 * @module
 */
export { exec } from "./exec.ts";
export { probe } from "./probe.ts";
export { BeneathError, readFileBeneath, writeFileBeneath } from "./beneath.ts";
export { coopStateDir, lastSelfTest, selfTest } from "./self_test.ts";
export type { SelfTestCheck, SelfTestResult } from "./self_test.ts";
export type { ProbeCheck, ProbeReport } from "./probe.ts";
export type { ExecOptions, ExecResult } from "./exec.ts";
export type { DiskQuotaReport } from "./disk_quota.ts";
export { measureQuotaRoom, prepareQuotaWorkspace } from "./quota_room.ts";
export type { QuotaEnforcement, QuotaRoom, QuotaStanding, WorkspaceQuotas } from "./quota_room.ts";
export type { SandboxTerminal, TerminalSize } from "./terminal.ts";
export { spawnSandboxed } from "./spawn.ts";
export { SessionEndedError, SessionOutdatedError, startSession } from "./session.ts";
export { SandboxUpperInUseError } from "./upper_lock.ts";
export { environmentWritesSettled } from "./upper_sync.ts";
export type {
  SessionCpuTime,
  SessionExecOptions,
  SessionOptions,
  SessionSandbox,
} from "./session.ts";
export { DEFAULT_SCAN_LIMIT } from "./protected_paths.ts";
export { runOffLoop, warmOffLoop } from "./off_loop.ts";
export { discardPrestarted } from "./prestart.ts";
export { settleSandboxCgroups } from "./prestart.ts";
export { type CgroupSweep, sweepDeadSandboxCgroups } from "./cgroup_sweep.ts";
export type {
  ProxyTestHooks,
  SandboxCpuTime,
  SandboxProcess,
  SandboxStatus,
  SpawnOptions,
} from "./spawn.ts";
export {
  decideAddress,
  hostNetwork,
  parseAddress,
  parseAllowEntry,
  parseSocketAddress,
  startPolicyProxy,
  sweepDeadProxyDirs,
} from "./proxy/mod.ts";
export type {
  AddressDecision,
  AllowEntry,
  DialRules,
  HostNetwork,
  IpAddress,
  PolicyProxy,
  PolicyProxyOptions,
  ProxyDenial,
  ProxyDirSweep,
  Resolver,
  SocketAddress,
} from "./proxy/mod.ts";
export { MIN_MEMORY_BYTES, NETWORK_MODES, resolvePolicy } from "./policy.ts";
export { planLimits } from "./limits.ts";
export type { AppliedLimits, LimitPath, LimitPlan } from "./limits.ts";
export { cgroupHost } from "./cgroup_host.ts";
export { cgroupHostWithDelegation, delegateUserScope } from "./cgroup_delegate.ts";
export type { CgroupHost } from "./cgroup_host.ts";
export type { NetworkMode, SandboxPolicy, SandboxPolicyInput } from "./policy.ts";
export type { PersistBind, RootfsPolicy } from "./rootfs_policy.ts";
export {
  SandboxError,
  SandboxLimitError,
  SandboxPolicyError,
  SandboxQuotaError,
  SandboxSetupError,
  SandboxUnavailableError,
  SandboxWorkspaceError,
} from "./errors.ts";
export { SandboxHostIdError } from "./host_ids.ts";
export type { StepName } from "./protocol.ts";
