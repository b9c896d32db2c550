/**
 * What `coop usage` prints: each person's and each budgeted group chat's consumption in every
 * budget window, beside the budget that applies (from the same `BudgetGate.scopesFor` the
 * gateway checks turns with).
 * @module
 */
import type { CoopConfig, UserConfig } from "../config/config.ts";
import { type Budget, BUDGET_KINDS, type BudgetKind } from "../config/budget_settings.ts";
import type { UsageStore, UsageSubject } from "../state/usage_store.ts";
import { BudgetGate, groupLabel } from "./budget_gate.ts";
import { routeUser } from "./router.ts";
import { TERMINAL_OWNER_NAME } from "../trust/trust_level.ts";

/** Usage in each budget's window: turns in the last hour, tokens and CPU in the last 24 h. */
export type WindowUsage = Record<BudgetKind["key"], number>;

/** One person's or group's line. */
export interface UsageLine {
  /** A user's name, `public:<sender>` for an unknown sender, or a group's label. */
  name: string;
  /** `user` (configured), `sender` (a default principal), or `group`. */
  kind: "user" | "sender" | "group";
  /** The owner without a budget of their own: never refused. */
  exempt: boolean;
  /** What was used, per budget key (each over that key's window). */
  used: WindowUsage;
  /** The limits that apply, by key (absent: none). */
  budget: Budget;
  /** Keys whose limit is reached: the next turn is refused. */
  spent: BudgetKind["key"][];
}

/** The whole report. */
export interface UsageReport {
  /** Every budget key's window, in seconds (rolling). */
  windows: Record<BudgetKind["key"], number>;
  /** Configured users first (in config order), then other senders seen in the windows. */
  people: UsageLine[];
  /** Group chats with a budget, or with turns in the windows. */
  groups: UsageLine[];
}

/** What `subject` used in each budget key's window (CPU seconds to the millisecond). */
export function usedBy(usage: UsageStore, subject: UsageSubject): WindowUsage {
  const out = {} as WindowUsage;
  for (const kind of BUDGET_KINDS) {
    const totals = usage.totals(subject, kind.windowMs);
    out[kind.key] = kind.key === "turns_per_hour"
      ? totals.turns
      : kind.key === "tokens_per_day"
      ? totals.tokens
      : Math.round(totals.sandboxSeconds * 1000) / 1000;
  }
  return out;
}

function line(
  name: string,
  kind: UsageLine["kind"],
  used: WindowUsage,
  budget: Budget,
  exempt: boolean,
): UsageLine {
  const spent = BUDGET_KINDS.map((k) => k.key).filter((key) =>
    !exempt && budget[key] !== undefined && used[key] >= budget[key]!
  );
  return { name, kind, exempt, used, budget, spent };
}

/**
 * Builds the report from the config, the paired people and the usage counters.
 *
 * @example
 * ```ts
 * const report = usageReport(config, new UsageStore(db));
 * report.people[0].used.turns_per_hour; // turns in the last hour
 * ```
 */
export function usageReport(
  config: Pick<CoopConfig, "users" | "groups">,
  usage: UsageStore,
  paired: readonly UserConfig[] = [],
): UsageReport {
  const gate = new BudgetGate(config, usage);
  const longest = Math.max(...BUDGET_KINDS.map((k) => k.windowMs));
  // Paired people (`coop pairing approve`) are users too, with `[pairing.budget]` as theirs.
  const users = [...config.users, ...paired];
  const people = users.map((user) => {
    const scopes = gate.scopesFor(routeUser(user), "");
    const exempt = user.trust === "owner" && scopes.length === 0;
    return line(user.name, "user", usedBy(usage, { person: user.name }), user.budget ?? {}, exempt);
  });
  const configured = new Set(users.map((u) => u.name));
  for (const person of usage.subjects("person", longest)) {
    if (configured.has(person)) continue;
    // The terminal's default owner (`owner:<sender>`): exempt like a configured owner.
    const exempt = person.startsWith(`${TERMINAL_OWNER_NAME}:`);
    people.push(line(person, "sender", usedBy(usage, { person }), {}, exempt));
  }
  const groups: UsageLine[] = [];
  const labels = new Set<string>();
  for (const group of config.groups) {
    const name = groupLabel(group);
    labels.add(name);
    groups.push(line(name, "group", usedBy(usage, { group: name }), group.budget ?? {}, false));
  }
  for (const name of usage.subjects("group", longest)) {
    if (!labels.has(name)) {
      groups.push(line(name, "group", usedBy(usage, { group: name }), {}, false));
    }
  }
  const windows = Object.fromEntries(BUDGET_KINDS.map((k) => [k.key, k.windowMs / 1000])) as Record<
    BudgetKind["key"],
    number
  >;
  return { windows, people, groups };
}
