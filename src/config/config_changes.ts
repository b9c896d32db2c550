/**
 * What differs between two configs, by section and by name — for the gateway's `reload` log
 * line. Only names are reported (users, groups, channel tables, sections), never values: a
 * channel table names the variables holding its secrets, not the secrets, and even those names
 * are not repeated.
 * @module
 */
import type { CoopConfig } from "./config.ts";

/** The sections of `coop.toml` a reload reports on. */
export interface ConfigChanges {
  /** Users added (`+name`), removed (`-name`) or changed (`name`). */
  users: string[];
  /** Groups the same way (by `name`, else their first pattern). */
  groups: string[];
  /** Whether `[sandbox]` changed. */
  sandbox: boolean;
  /** Channel tables that changed (`telegram`, `signal`, `http`, `terminal`). */
  channels: string[];
  /** Other top-level sections that changed (`agent`, `providers`, `cron`). */
  other: string[];
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

function byName<T>(
  before: readonly T[],
  after: readonly T[],
  name: (item: T) => string,
): string[] {
  const old = new Map(before.map((item) => [name(item), item]));
  const now = new Map(after.map((item) => [name(item), item]));
  const out: string[] = [];
  for (const [key, item] of now) {
    if (!old.has(key)) out.push(`+${key}`);
    else if (!same(old.get(key), item)) out.push(key);
  }
  for (const key of old.keys()) if (!now.has(key)) out.push(`-${key}`);
  return out;
}

/**
 * The differences from `before` to `after`.
 *
 * @example
 * ```ts
 * configChanges(running, reloaded).users; // ["bob", "+dave"]
 * ```
 */
export function configChanges(before: CoopConfig, after: CoopConfig): ConfigChanges {
  const a = before.raw;
  const b = after.raw;
  const channelNames = new Set([...Object.keys(a.channels), ...Object.keys(b.channels)]);
  return {
    users: byName(a.users, b.users, (u) => u.name),
    groups: byName(a.groups, b.groups, (g) => g.name ?? g.match[0]),
    sandbox: !same(a.sandbox, b.sandbox),
    channels: [...channelNames].filter((name) =>
      !same(
        a.channels[name as keyof typeof a.channels],
        b.channels[name as keyof typeof b.channels],
      )
    ).sort(),
    other: (["agent", "providers", "cron"] as const).filter((key) => !same(a[key], b[key])),
  };
}

/** Whether anything changed at all. */
export function hasChanges(changes: ConfigChanges): boolean {
  return changes.users.length > 0 || changes.groups.length > 0 || changes.sandbox ||
    changes.channels.length > 0 || changes.other.length > 0;
}
