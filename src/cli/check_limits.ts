/**
 * `coop check`'s limits section: the memory, process and CPU limits each non-owner's
 * sandboxed commands get, where each was set, and the path that enforces them on this host.
 * @module
 */
import type { CoopConfig } from "../config/config.ts";
import {
  type EffectiveLimits,
  effectiveLimits,
  type LimitValue,
} from "../config/effective_limits.ts";
import { formatByteSize } from "../sandbox/byte_size.ts";
import { type CgroupHost, cgroupHost } from "../sandbox/mod.ts";

/** The limits of one principal, as `coop check --json` reports them. */
export interface CheckedLimits extends EffectiveLimits {
  /** Whose: `unknown senders`, `user "bob"`, `cron job "digest"`. */
  who: string;
}

/** The limits of strangers, of every non-owner user and of every non-owner's cron job. */
export function checkedLimits(
  config: CoopConfig,
  host: CgroupHost = cgroupHost(),
): CheckedLimits[] {
  const owners = new Set(config.users.filter((u) => u.trust === "owner").map((u) => u.name));
  const out: CheckedLimits[] = [
    { who: "unknown senders", ...effectiveLimits(config, undefined, undefined, host) },
  ];
  for (const user of config.users) {
    if (owners.has(user.name)) continue;
    out.push({ who: `user "${user.name}"`, ...effectiveLimits(config, user, undefined, host) });
  }
  for (const job of config.cron) {
    if (owners.has(job.user)) continue;
    const user = config.users.find((u) => u.name === job.user);
    out.push({ who: `cron job "${job.name}"`, ...effectiveLimits(config, user, job, host) });
  }
  return out;
}

function show(limit: LimitValue, format: (n: number) => string): string {
  const value = limit.value === null ? "unlimited" : format(limit.value);
  return limit.source === "default" ? `${value} (default)` : value;
}

/** One line per principal for the human report. */
export function renderLimits(limits: readonly CheckedLimits[]): string[] {
  return limits.map((l) => {
    const values = `memory ${show(l.memoryBytes, formatByteSize)}, pids ${
      show(l.pidsLimit, String)
    }, cpus ${show(l.cpus, String)}, disk ${show(l.diskQuotaBytes, formatByteSize)}, inodes ${
      show(l.inodeQuota, String)
    }${l.quotaEnforcement ? ` (quotas by ${l.quotaEnforcement})` : ""}`;
    const how = l.applied
      ? `enforced by ${l.applied.path} (${l.applied.reason})`
      : `REFUSED here: ${l.refusal}`;
    return `limits: ${l.who}: ${values}; ${how}`;
  });
}
