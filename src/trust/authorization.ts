/**
 * `authorize()`: the one place that decides whether a principal may do something.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { MEMORY_TOOLS, type ToolName } from "./tool_names.ts";
import {
  atLeast,
  leastTrusted,
  memoryReadersOf,
  type MemoryStore,
  type MemoryStoreName,
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
  /**
   * The most trusted level whose content the turn holds: its history was written at those
   * trusts, and a memory it read was readable no lower than its store allows. What the turn
   * writes may repeat any of it, so a memory write goes only where every reader is at least that
   * trusted — even after the turn was lowered (`TurnTaint`). Absent: its effective trust.
   */
  holds?: TrustLevel;
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
  | { kind: "memory_read"; store: MemoryStoreName; person?: string }
  | { kind: "memory_write"; store: MemoryStoreName; person?: string }
  | { kind: "memory_forget"; entry: MemoryEntryRef }
  | { kind: "config_change"; section: ConfigSection }
  | { kind: "cron_create" }
  /** Deciding pairing requests and seeing who is paired (`/approve`, `/deny`, `/status`). */
  | { kind: "pairing"; op: "approve" | "deny" | "list" }
  /** Ending a chat session (`/clear`): one's own, or a group chat's that its members share. */
  | { kind: "session_clear"; shared: boolean };

/**
 * A stored memory as `memory_read`/`memory_forget` decide about it. `person` names whose
 * personal store holds it (only for `personal`); `author` and `trust` are the turn that wrote it.
 */
export interface MemoryEntryRef {
  /** The store it lives in. */
  store: MemoryStoreName;
  /** Whose personal store it is in (`personal` only). */
  person?: string;
  /** The principal whose turn wrote it. */
  author: string;
  /** The effective trust of that turn. */
  trust: TrustLevel;
}

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
  holds: TrustLevel,
): Decision {
  if (!memoryStoresFor(trust).includes(store)) return deny(`memory.${store}.denied`, trust);
  if (kind === "memory_read") return allow(`memory.${store}.allowed`, trust);
  if (trust === "owner") return allow(`memory.${store}.owner_writes`, trust);
  // No write-down: a turn's content never goes where someone less trusted can read it.
  if (!memoryWritableStoresFor(trust).includes(store)) {
    return deny(`memory.${store}.write_down`, trust);
  }
  // Nor does what it read before it was lowered: a turn that took in private hits and then an
  // injected social memory is "familiar" now, but its context still holds the private text.
  return memoryReadersOf(store).every((reader) => atLeast(reader, holds))
    ? allow(`memory.${store}.write_allowed`, trust)
    : deny(`memory.${store}.write_down_held`, trust);
}

/**
 * The personal store of `person`: its readers are that person and the owner, both at least as
 * trusted as any turn of that person, so a write is never a write-down (checked all the same
 * against what the turn holds). Its text reaches only the chat the turn answers: a group hears
 * it too, so a group turn neither reads nor writes it.
 */
function decidePersonal(
  kind: "memory_read" | "memory_write",
  person: string | undefined,
  principal: Principal,
  situation: Pick<Situation, "ceiling" | "holds">,
  trust: TrustLevel,
): Decision {
  if (trust === "public") return deny("memory.personal.denied", trust);
  if (person === undefined) return deny("memory.personal.no_person", trust);
  if (situation.ceiling !== null) return deny("memory.personal.group_chat", trust);
  if (kind === "memory_write" && !atLeast(principal.trust, situation.holds ?? trust)) {
    return deny("memory.personal.write_down_held", trust);
  }
  if (person === principal.name) return allow(`memory.personal.own_${kind.slice(7)}`, trust);
  // The owner may read everyone's (their own agent, their own machine), never write into it.
  if (kind === "memory_read" && trust === "owner") {
    return allow("memory.personal.owner_reads", trust);
  }
  return deny("memory.personal.not_yours", trust);
}

/**
 * Forgetting a memory: only its author, only where the turn may read it, and only from a turn
 * at least as trusted as the one that wrote it — so text a lowered (possibly injected) turn read
 * cannot make it erase what its person wrote at full trust.
 */
function decideForget(
  entry: MemoryEntryRef,
  principal: Principal,
  situation: Pick<Situation, "ceiling">,
  trust: TrustLevel,
): Decision {
  if (entry.author !== principal.name) return deny("memory.forget.not_author", trust);
  const read = entry.store === "personal"
    ? decidePersonal("memory_read", entry.person, principal, situation, trust)
    : decideMemory("memory_read", entry.store, trust, trust);
  if (!read.allowed) return deny(`memory.forget.${read.rule}`, trust);
  return atLeast(trust, entry.trust)
    ? allow("memory.forget.own_entry", trust)
    : deny("memory.forget.less_trusted_than_author", trust);
}

function decideTool(tool: ToolName, trust: TrustLevel, sandboxEnabled: boolean): Decision {
  // Memory tools run in the gateway; each store and entry they touch is authorized again per
  // call. Everyone but public has a store (their personal one, at least outside groups).
  if (MEMORY_TOOLS.includes(tool)) {
    return trust !== "public"
      ? allow(`tool.${tool}.some_store`, trust)
      : deny(`tool.${tool}.no_store`, trust);
  }
  // Only the owner leaves the sandbox; everyone else runs inside it or not at all.
  const placement: Placement = trust === "owner" ? "host" : "sandbox";
  // `exec` is `bash` without the shell: the same trust, the same place, the same limits.
  if (tool === "bash" || tool === "exec") {
    if (trust === "owner") return allow(`tool.${tool}.owner_host`, trust, "host");
    if (!atLeast(trust, "inner")) return deny(`tool.${tool}.needs_inner`, trust);
    if (!sandboxEnabled) return deny(`tool.${tool}.sandbox_disabled`, trust);
    return allow(`tool.${tool}.sandboxed`, trust, "sandbox");
  }
  // Sending a file shows it to the caller, like reading it: the same trust as `read_file`.
  if (tool === "read_file" || tool === "send_file") {
    const name = tool === "read_file" ? "read" : tool;
    return atLeast(trust, "familiar")
      ? allow(`tool.${name}.familiar_or_better`, trust, placement)
      : deny(`tool.${name}.needs_familiar`, trust);
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
      return action.store === "personal"
        ? decidePersonal(action.kind, action.person, principal, situation, trust)
        : decideMemory(action.kind, action.store, trust, situation.holds ?? trust);
    case "memory_forget":
      return decideForget(action.entry, principal, situation, trust);
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
    case "session_clear":
      // One's own session is one's own to end. A group's history and sandbox belong to all its
      // members: a stranger there (public) must not be able to wipe them.
      if (!action.shared) return allow("session.clear.own", trust);
      return atLeast(trust, "familiar")
        ? allow("session.clear.group_member", trust)
        : deny("session.clear.group_needs_familiar", trust);
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
