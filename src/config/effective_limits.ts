/**
 * The resource limits a non-owner's sandboxed command gets, where each value comes from, and
 * which enforcement path would apply them on this host: what `coop check` (and `coop explain`)
 * show. Pure given the cgroup host, so it can be shown without starting a sandbox.
 * @module
 */
import {
  type AppliedLimits,
  type CgroupHost,
  planLimits,
  resolvePolicy,
  SandboxError,
} from "../sandbox/mod.ts";
import type { CoopConfig, CronJobConfig, UserConfig } from "./config.ts";
import type { RawSandboxOverrides } from "./config_schema.ts";
import { mergeSandboxSettings, type SandboxSettings, toSandboxPolicy } from "./sandbox_settings.ts";

/** Which layer of the config set a limit: Coop's default, `[sandbox]`, the user, the cron job. */
export type LimitSource = "default" | "sandbox" | "user" | "cron";

/** One limit's value (null: unlimited) and where it was set. */
export interface LimitValue {
  value: number | null;
  source: LimitSource;
}

/** The effective limits of one principal (a user, a cron job, or `[sandbox]` for strangers). */
export interface EffectiveLimits {
  /** `memory`, bytes. */
  memoryBytes: LimitValue;
  /** `pids_limit`. */
  pidsLimit: LimitValue;
  /** `cpus`, cores. */
  cpus: LimitValue;
  /** `disk_quota`, bytes. */
  diskQuotaBytes: LimitValue;
  /** `inode_quota`. */
  inodeQuota: LimitValue;
  /**
   * How the quotas are enforced, when there are any: `loop-image` (root, a disk quota: hard for
   * an empty workspace, accounting for one that already holds files) or `accounting`.
   */
  quotaEnforcement: "loop-image" | "accounting" | null;
  /** What the sandbox would apply here, by which path and why not a better one. */
  applied: AppliedLimits | null;
  /** Why no path can apply them here (the command would be refused), or null. */
  refusal: string | null;
}

const KEYS = [
  ["memoryBytes", "memory"],
  ["pidsLimit", "pids_limit"],
  ["cpus", "cpus"],
  ["diskQuotaBytes", "disk_quota"],
  ["inodeQuota", "inode_quota"],
] as const;

function sourceOf(
  rawKey: keyof RawSandboxOverrides,
  layers: Array<[LimitSource, RawSandboxOverrides | undefined]>,
): LimitSource {
  let source: LimitSource = "default";
  for (const [name, raw] of layers) if (raw?.[rawKey] !== undefined) source = name;
  return source;
}

/**
 * The effective limits for `user` (and `cronJob`, which runs as a user), or for senders with no
 * user entry when both are absent; `host` is the cgroup situation to plan against and `uid`
 * the gateway's (root can make hard quotas).
 *
 * @example
 * ```ts
 * const limits = effectiveLimits(config, config.users[1], undefined, cgroupHost());
 * limits.memoryBytes; // { value: 2147483648, source: "default" }
 * limits.applied?.path; // "cgroup-v2", "cgroup-v1" or "rlimit"
 * ```
 */
export function effectiveLimits(
  config: CoopConfig,
  user: UserConfig | undefined,
  cronJob: CronJobConfig | undefined,
  host: CgroupHost,
  uid: number = Deno.uid() ?? 0,
): EffectiveLimits {
  const settings: SandboxSettings = mergeSandboxSettings(
    config.sandbox.defaults,
    user?.sandbox ?? {},
    cronJob?.sandbox ?? {},
  );
  const rawUser = user && config.raw.users.find((u) => u.name === user.name)?.sandbox;
  const rawCron = cronJob && config.raw.cron.find((c) => c.name === cronJob.name)?.sandbox;
  const layers: Array<[LimitSource, RawSandboxOverrides | undefined]> = [
    ["sandbox", config.raw.sandbox],
    ["user", rawUser],
    ["cron", rawCron],
  ];
  const value = (field: (typeof KEYS)[number]): LimitValue => ({
    value: settings[field[0]] ?? null,
    source: sourceOf(field[1], layers),
  });
  let applied: AppliedLimits | null = null, refusal: string | null = null;
  try {
    applied = planLimits(resolvePolicy(toSandboxPolicy(settings, "/")), host).applied;
  } catch (error) {
    if (!(error instanceof SandboxError)) throw error;
    refusal = error.message;
  }
  return {
    memoryBytes: value(KEYS[0]),
    pidsLimit: value(KEYS[1]),
    cpus: value(KEYS[2]),
    diskQuotaBytes: value(KEYS[3]),
    inodeQuota: value(KEYS[4]),
    quotaEnforcement: settings.diskQuotaBytes !== undefined && uid === 0
      ? "loop-image"
      : settings.diskQuotaBytes !== undefined || settings.inodeQuota !== undefined
      ? "accounting"
      : null,
    applied,
    refusal,
  };
}
