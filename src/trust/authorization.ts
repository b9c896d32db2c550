/**
 * `authorize()`: the one place that decides whether a principal may do something.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { ToolName } from "./tool_names.ts";
import {
  atLeast,
  leastTrusted,
  MEMORY_STORES,
  type MemoryStore,
  memoryStoresFor,
  memoryWritableStoresFor,
  type TrustLevel,
} from "./trust_level.ts";

const log = getLogger(["coop", "authz"]);

/** Who is acting: a configured user, or a default principal for an unknown sender. */
export interface Principal {
  /** User name, or e.g. `public` for an unmatched sender. */
  name: string;
  /** The principal's own trust, before ceilings and taint. */
  trust: TrustLevel;
}

/** The circumstances of the turn. */
export interface Situation {
  /** The channel the turn came from, e.g. `terminal`. */
  channel: string;
  /** The group's trust ceiling, or null outside a group. */
  ceiling: TrustLevel | null;
  /**
   * Trust of everything else that entered the turn: history, quotes, memories it read (see
   * `TurnTaint`).
   */
  contributors: readonly TrustLevel[];
  /** Whether `[sandbox] enabled` is true. */
  sandboxEnabled: boolean;
}

/** Config sections; every change to config is owner-only. */
export type ConfigSection =
  | "agent"
  | "users"
  | "groups"
  | "sandbox"
  | "cron"
  | "providers"
  | "channels";

/** Something a principal wants to do. */
export type Action =
  | { kind: "route_message" }
  | { kind: "tool"; tool: ToolName }
  | { kind: "memory_read"; store: MemoryStore }
  | { kind: "memory_write"; store: MemoryStore }
  | { kind: "config_change"; section: ConfigSection }
  | { kind: "cron_create" }
  /** Deciding pairing requests and seeing who is paired (`/approve`, `/deny`, `/status`). */
  | { kind: "pairing"; op: "approve" | "deny" | "list" };

/** Where an allowed action runs: on the host or inside the sandbox. */
export type Placement = "host" | "sandbox" | "gateway";

/** The outcome of `authorize()`. */
export interface Decision {
  /** Whether the action may proceed. */
  allowed: boolean;
  /** The rule that decided, e.g. `tool.bash.owner_host`. */
  rule: string;
  /** The least trusted of user, ceiling and contributors. */
  effectiveTrust: TrustLevel;
  /** Where the action runs when allowed (`gateway` for non-execution actions). */
  placement: Placement;
}

/** Returns the effective trust of a turn: the least trusted of everything that shaped it. */
export function effectiveTrust(
  principal: Principal,
  situation: Pick<Situation, "ceiling" | "contributors">,
): TrustLevel {
  const ceiling = situation.ceiling === null ? [] : [situation.ceiling];
  return leastTrusted(principal.trust, ...ceiling, ...situation.contributors);
}

function allow(rule: string, trust: TrustLevel, placement: Placement = "gateway"): Decision {
  return { allowed: true, rule, effectiveTrust: trust, placement };
}

function deny(rule: string, trust: TrustLevel): Decision {
  return { allowed: false, rule, effectiveTrust: trust, placement: "gateway" };
}

function decideMemory(
  kind: "memory_read" | "memory_write",
  store: MemoryStore,
  trust: TrustLevel,
): Decision {
  if (!memoryStoresFor(trust).includes(store)) return deny(`memory.${store}.denied`, trust);
  if (kind === "memory_read") return allow(`memory.${store}.allowed`, trust);
  if (trust === "owner") return allow(`memory.${store}.owner_writes`, trust);
  // No write-down: a turn's content never goes where someone less trusted can read it.
  return memoryWritableStoresFor(trust).includes(store)
    ? allow(`memory.${store}.write_allowed`, trust)
    : deny(`memory.${store}.write_down`, trust);
}

function decideTool(tool: ToolName, trust: TrustLevel, sandboxEnabled: boolean): Decision {
  // Memory tools run in the gateway; each store they touch is authorized again per call.
  if (tool === "memory_search" || tool === "memory_write") {
    const kind = tool === "memory_search" ? "memory_read" : "memory_write";
    return MEMORY_STORES.some((store) => decideMemory(kind, store, trust).allowed)
      ? allow(`tool.${tool}.some_store`, trust)
      : deny(`tool.${tool}.no_store`, trust);
  }
  // Only the owner leaves the sandbox; everyone else runs inside it or not at all.
  const placement: Placement = trust === "owner" ? "host" : "sandbox";
  if (tool === "bash") {
    if (trust === "owner") return allow("tool.bash.owner_host", trust, "host");
    if (!atLeast(trust, "inner")) return deny("tool.bash.needs_inner", trust);
    if (!sandboxEnabled) return deny("tool.bash.sandbox_disabled", trust);
    return allow("tool.bash.sandboxed", trust, "sandbox");
  }
  if (tool === "read_file") {
    return atLeast(trust, "familiar")
      ? allow("tool.read.familiar_or_better", trust, placement)
      : deny("tool.read.needs_familiar", trust);
  }
  return atLeast(trust, "inner")
    ? allow("tool.write.inner_or_better", trust, placement)
    : deny("tool.write.needs_inner", trust);
}

/** Decides `action` without side effects; `authorize()` is this plus the log line. */
export function decide(principal: Principal, situation: Situation, action: Action): Decision {
  const trust = effectiveTrust(principal, situation);
  switch (action.kind) {
    case "route_message":
      // Everyone may talk to the agent; what the agent may do for them is decided per action.
      return allow("route.anyone", trust);
    case "tool":
      return decideTool(action.tool, trust, situation.sandboxEnabled);
    case "memory_read":
    case "memory_write":
      return decideMemory(action.kind, action.store, trust);
    case "config_change":
      return trust === "owner"
        ? allow("config.owner_only", trust)
        : deny("config.owner_only", trust);
    case "cron_create":
      return trust === "owner" ? allow("cron.owner_only", trust) : deny("cron.owner_only", trust);
    case "pairing":
      // Who may talk to the agent is the owner's decision alone, and who is paired their business.
      return trust === "owner"
        ? allow("pairing.owner_only", trust)
        : deny("pairing.owner_only", trust);
  }
}

/**
 * Decides `action` for `principal` in `situation` and logs an `authz.decision` event.
 *
 * @example
 * ```ts
 * const d = authorize({ name: "bob", trust: "inner" }, situation, { kind: "tool", tool: "bash" });
 * if (!d.allowed) return `denied (${d.rule})`;
 * ```
 */
export function authorize(principal: Principal, situation: Situation, action: Action): Decision {
  const decision = decide(principal, situation, action);
  log.info("authz.decision", {
    event: "authz.decision",
    principal: principal.name,
    trust: principal.trust,
    channel: situation.channel,
    ceiling: situation.ceiling,
    contributors: situation.contributors,
    action,
    ...decision,
  });
  return decision;
}
