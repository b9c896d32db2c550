/**
 * Sandbox settings: the global `[sandbox]` table merged with a user's or cron job's overrides.
 * @module
 */
import { resolve } from "node:path";
import { DEFAULT_SCAN_LIMIT, type SandboxPolicyInput } from "../sandbox/mod.ts";
import type { RawSandboxOverrides } from "./config_schema.ts";
import { networkOfAllowNetwork } from "./allow_network_alias.ts";

/** Default `bash` timeout. */
export const DEFAULT_TIMEOUT_MS = 120_000;
/** Default largest `bash` timeout the model may request. */
export const DEFAULT_MAX_TIMEOUT_MS = 600_000;
/**
 * Memory limit of a non-owner's sandboxed command when the config sets none (the owner-role
 * spec's default; docs/limits.md).
 */
export const DEFAULT_MEMORY_BYTES = 2 * 2 ** 30;
/** Process limit of a non-owner's sandboxed command when the config sets none. */
export const DEFAULT_PIDS_LIMIT = 512;
/** Default size of the sandbox's `/tmp`. */
export const DEFAULT_TMP_SIZE_BYTES = 64 * 2 ** 20;

/**
 * The resolved sandbox settings for one principal; `toSandboxPolicy` maps them onto the
 * sandbox's policy.
 */
export interface SandboxSettings {
  /** `none`, `host`, `proxy` or `public` (docs/network.md). */
  network: "none" | "host" | "proxy" | "public";
  /** `HOST[:PORT]` entries reachable through the proxy (network `proxy` only). */
  allowDomains: readonly string[];
  /** Most proxy connections open at once (network `proxy`; the library's default when unset). */
  proxyMaxConnections?: number;
  /** Memory limit in bytes (a cgroup, else RLIMIT_AS; docs/limits.md); 2 GiB by default. */
  memoryBytes?: number;
  /** Process limit (a cgroup's pids.max, else RLIMIT_NPROC); 512 by default. */
  pidsLimit?: number;
  /** CPU limit in cores (cgroup v1 only; the sandbox refuses to start without it). */
  cpus?: number;
  /** Disk space each workspace may use, in bytes (unset: no quota). */
  diskQuotaBytes?: number;
  /** Files and directories each workspace may hold (unset: no quota). */
  inodeQuota?: number;
  /** Default `bash` timeout. */
  timeoutMs: number;
  /** Largest `bash` timeout the model may ask for. */
  maxTimeoutMs: number;
  /** Size of `/tmp` inside the sandbox. */
  tmpSizeBytes: number;
  /** Host environment variables copied into the sandbox. */
  envPassthrough: readonly string[];
  /** Names re-mounted read-only at the workspace top and one level down (default `.git`). */
  protectedNames: readonly string[];
  /** Most directory entries a workspace scan reads before and after a call (ATTACKS R12). */
  scanLimit: number;
  /** The environment's Coopfile, absolute (docs/environments.md); unset: the host's root. */
  environment?: string;
}

/** Converts a parsed override table into the fields it sets. */
export function overridesFromRaw(
  raw: RawSandboxOverrides | undefined,
  baseDir: string = "/",
): Partial<SandboxSettings> {
  if (!raw) return {};
  const out: Partial<SandboxSettings> = {};
  if (raw.network !== undefined) out.network = raw.network;
  else if (raw.allow_network !== undefined) {
    const network = networkOfAllowNetwork(raw.allow_network);
    if (network) out.network = network;
  }
  if (raw.allow_domains !== undefined) out.allowDomains = raw.allow_domains;
  if (raw.max_connections !== undefined) {
    out.proxyMaxConnections = raw.max_connections;
  }
  if (raw.memory !== undefined) out.memoryBytes = raw.memory;
  if (raw.pids_limit !== undefined) out.pidsLimit = raw.pids_limit;
  if (raw.cpus !== undefined) out.cpus = raw.cpus;
  if (raw.disk_quota !== undefined) out.diskQuotaBytes = raw.disk_quota;
  if (raw.inode_quota !== undefined) out.inodeQuota = raw.inode_quota;
  if (raw.timeout !== undefined) out.timeoutMs = raw.timeout;
  if (raw.max_timeout !== undefined) out.maxTimeoutMs = raw.max_timeout;
  if (raw.tmp_size !== undefined) out.tmpSizeBytes = raw.tmp_size;
  if (raw.env_passthrough !== undefined) out.envPassthrough = raw.env_passthrough;
  if (raw.protected_names !== undefined) out.protectedNames = raw.protected_names;
  if (raw.workspace_scan_limit !== undefined) out.scanLimit = raw.workspace_scan_limit;
  if (raw.environment !== undefined) out.environment = resolve(baseDir, raw.environment);
  return out;
}

/** Returns the global settings: the `[sandbox]` table over Coop's defaults. */
export function globalSandboxSettings(
  raw: RawSandboxOverrides,
  baseDir: string = "/",
): SandboxSettings {
  return {
    network: "none",
    allowDomains: [],
    timeoutMs: DEFAULT_TIMEOUT_MS,
    maxTimeoutMs: DEFAULT_MAX_TIMEOUT_MS,
    tmpSizeBytes: DEFAULT_TMP_SIZE_BYTES,
    envPassthrough: [],
    protectedNames: [".git"],
    scanLimit: DEFAULT_SCAN_LIMIT,
    memoryBytes: DEFAULT_MEMORY_BYTES,
    pidsLimit: DEFAULT_PIDS_LIMIT,
    ...overridesFromRaw(raw, baseDir),
  };
}

/** Returns `base` with `overrides` applied on top, key by key. */
export function mergeSandboxSettings(
  base: SandboxSettings,
  ...overrides: readonly Partial<SandboxSettings>[]
): SandboxSettings {
  return Object.assign({}, base, ...overrides);
}

/**
 * Maps settings onto the sandbox library's policy for `workspace`. `allowDomains` is passed
 * only with network "proxy": elsewhere it has nothing to allow.
 */
export function toSandboxPolicy(settings: SandboxSettings, workspace: string): SandboxPolicyInput {
  return {
    workspace,
    network: settings.network,
    ...(settings.network === "proxy" ? { allowDomains: [...settings.allowDomains] } : {}),
    ...(settings.proxyMaxConnections !== undefined
      ? { proxyMaxConnections: settings.proxyMaxConnections }
      : {}),
    tmpSizeBytes: settings.tmpSizeBytes,
    envPassthrough: [...settings.envPassthrough],
    protectedNames: [...settings.protectedNames],
    scanLimit: settings.scanLimit,
    ...(settings.memoryBytes !== undefined ? { memoryBytes: settings.memoryBytes } : {}),
    ...(settings.pidsLimit !== undefined ? { pidsLimit: settings.pidsLimit } : {}),
    ...(settings.cpus !== undefined ? { cpus: settings.cpus } : {}),
    ...(settings.diskQuotaBytes !== undefined ? { diskQuotaBytes: settings.diskQuotaBytes } : {}),
    ...(settings.inodeQuota !== undefined ? { inodeQuota: settings.inodeQuota } : {}),
  };
}
