/**
 * `coop explain`: what one person can do, and why — computed by the code a turn runs (the
 * router, `effectiveTrust()`, `decide()`, the tool offer, the sandbox policy builder), never
 * described a second time.
 * @module
 */
import type { CoopConfig, UserConfig } from "../config/config.ts";
import { CoopError } from "../errors/coop_error.ts";
import { decide, effectiveTrust, type Situation } from "../trust/authorization.ts";
import { TOOL_NAMES } from "../trust/tool_names.ts";
import {
  MEMORY_STORE_NAMES,
  type MemoryStoreName,
  PERSONAL_STORE,
  type TrustLevel,
} from "../trust/trust_level.ts";
import { offeredToolNames } from "../tools/tool_executor.ts";
import { explainSandbox, type SandboxExplanation } from "./explain_sandbox.ts";
import { EXPLAIN_SECTIONS, type ExplainContext } from "./explain_sections.ts";
import { chatCeiling, DEFAULT_GROUP_CEILING, matchGroup, type Route, routeUser } from "./router.ts";
import { personNamed, readPairedUsers, routeWithPaired } from "./paired_routing.ts";
import { groupDirectoryName } from "../config/group_directories.ts";

/** Who to explain: a configured user by name, or a sender as a channel reports them. */
export type ExplainIdentity =
  | { user: string; channel?: string; group?: string }
  | { channel: string; sender: string; group?: string };

/** A decision of `authorize()` as the report shows it. */
export interface ExplainedDecision {
  /** The rule that decided. */
  rule: string;
  /** `host`, `sandbox` or `gateway`. */
  placement: string;
}

/** The whole report (`coop explain --json`). */
export interface Explanation {
  /** The turn being explained. */
  identity: {
    channel: string;
    /** The sender on that channel, when known. */
    sender: string | null;
    group: string | null;
    /** The principal's name (a configured user, or `public` / `owner` by default). */
    principal: string;
    /** True when the principal is a configured user. */
    configuredUser: boolean;
    /** How the router chose the principal (`matched`, `unmatched_public`, …, `named`). */
    route: Route["reason"] | "named";
  };
  /** The effective trust of a fresh turn and what made it so. */
  trust: {
    user: TrustLevel;
    ceiling: TrustLevel | null;
    /** Where the ceiling comes from. */
    ceilingFrom: string | null;
    effective: TrustLevel;
    /** The taint rule: what lowers a turn once it runs. */
    taint: string;
  };
  /** Tools offered to the model, in the order offered, with where each runs. */
  tools: (ExplainedDecision & { name: string })[];
  /** Tools not offered, with the rule (or why they are left out). */
  toolsDenied: { name: string; rule: string }[];
  /** Memory stores this turn may read and write. */
  memory: {
    read: MemoryStoreName[];
    write: MemoryStoreName[];
    decisions: { store: MemoryStoreName; read: string; write: string }[];
  };
  /** Where commands and file tools run, and the sandbox policy. */
  sandbox: SandboxExplanation;
  /** Sections other parts of Coop add (budgets and usage); see `explain_sections.ts`. */
  sections: Record<string, unknown>;
  /** Lines printed for each section. */
  sectionLines: Record<string, string[]>;
  /** Things worth knowing (e.g. no match pattern for the channel). */
  notes: string[];
}

/** An identity `coop explain` cannot resolve (an unknown user name). */
export class ExplainError extends CoopError {
  constructor(code: string, message: string) {
    super(code, message);
    this.name = "ExplainError";
  }
}

/** The sender a user has on `channel` by an exact (wildcard-free) match pattern. */
function exactSender(user: UserConfig, channel: string): string | undefined {
  const pattern = user.match.find((p) => p.startsWith(`${channel}:`) && !p.includes("*"));
  return pattern?.slice(channel.length + 1);
}

/** The route a turn of `identity` takes, and how it was found. */
interface ResolvedIdentity {
  route: Route;
  channel: string;
  sender: string | null;
  /** True when the user was addressed by name rather than routed by an address. */
  named: boolean;
  notes: string[];
}

function resolveIdentity(config: CoopConfig, identity: ExplainIdentity): ResolvedIdentity {
  const notes: string[] = [];
  // The people paired so far are routed as the gateway routes them (`routeWithPaired`).
  const paired = readPairedUsers(config);
  if ("sender" in identity) {
    const origin = { channel: identity.channel, sender: identity.sender, group: identity.group };
    const route = routeWithPaired(config, origin, paired);
    return { route, channel: identity.channel, sender: identity.sender, named: false, notes };
  }
  const user = personNamed(config, identity.user, paired);
  if (!user) {
    const names = [...config.users, ...paired].map((u) => u.name).join(", ") || "none";
    throw new ExplainError(
      "explain.unknown_user",
      `no [[users]] entry nor paired person is named "${identity.user}" (known: ${names}); ` +
        "for someone not known, give --channel and --sender",
    );
  }
  const channel = identity.channel ?? user.match[0]?.split(":")[0] ?? "terminal";
  const sender = exactSender(user, channel);
  if (sender !== undefined) {
    // Exactly as a message from that address is routed.
    const route = routeWithPaired(config, { channel, sender, group: identity.group }, paired);
    if (route.user?.name === user.name) return { route, sender, channel, named: false, notes };
    notes.push(
      `a message from ${channel}:${sender} is routed to "${route.principal.name}", ` +
        `not to "${user.name}"; shown as ${user.name} addressed by name`,
    );
  } else {
    notes.push(
      `${user.name} has no exact match pattern on channel "${channel}"; shown as a turn ` +
        `addressed to ${user.name} by name (cron jobs run like this)`,
    );
  }
  const route = {
    ...routeUser(user),
    ceiling: chatCeiling(config, channel, identity.group),
  };
  return { route, sender: sender ?? null, channel, named: true, notes };
}

const TAINT_RULE = "a turn also runs at the least trusted of every message in its session " +
  "history and every memory it reads (ATTACKS P14); the trust above is that of a fresh session";

/**
 * Explains what `identity` may do under `config`, with the code a turn uses.
 *
 * @example
 * ```ts
 * const report = await explainAccess(config, { user: "bob", channel: "http" });
 * report.tools.map((t) => t.name); // ["bash", "exec", "read_file", …]
 * ```
 */
export async function explainAccess(
  config: CoopConfig,
  identity: ExplainIdentity,
): Promise<Explanation> {
  const resolved = resolveIdentity(config, identity);
  const { route, notes, channel } = resolved;
  const group = identity.group;
  const situation: Situation = {
    channel,
    ceiling: route.ceiling,
    contributors: [],
    sandboxEnabled: config.sandbox.enabled,
  };
  const principal = route.principal;
  const trust = effectiveTrust(principal, situation);
  const groupConfig = group === undefined ? undefined : matchGroup(config.groups, channel, group);
  // The gateway always opens the memory stores, so the memory tools are offered by trust alone.
  const offered = offeredToolNames(principal, situation, true);
  const tools = offered.map((name) => {
    const d = decide(principal, situation, { kind: "tool", tool: name });
    return { name, rule: d.rule, placement: d.placement };
  });
  const toolsDenied = TOOL_NAMES.filter((name) => !offered.includes(name)).map((name) => ({
    name,
    rule: decide(principal, situation, { kind: "tool", tool: name }).rule,
  }));
  // Every store, the person's own personal store included (as the memory tools ask for it).
  const decisions = MEMORY_STORE_NAMES.map((store) => {
    const person = store === PERSONAL_STORE ? principal.name : undefined;
    return {
      store,
      read: decide(principal, situation, { kind: "memory_read", store, person }),
      write: decide(principal, situation, { kind: "memory_write", store, person }),
    };
  });
  const context: ExplainContext = {
    config,
    principal,
    user: route.user,
    channel,
    group,
    groupConfig,
    effectiveTrust: trust,
    route,
    sender: resolved.sender,
  };
  const sections: Record<string, unknown> = {};
  const sectionLines: Record<string, string[]> = {};
  for (const section of EXPLAIN_SECTIONS) {
    const result = await section.build(context);
    if (result === null) continue;
    sections[section.name] = result.json;
    sectionLines[section.name] = result.lines;
  }
  return {
    identity: {
      channel,
      sender: resolved.sender,
      group: group ?? null,
      principal: principal.name,
      configuredUser: route.user !== undefined,
      route: resolved.named ? "named" : route.reason,
    },
    trust: {
      user: principal.trust,
      ceiling: route.ceiling,
      ceilingFrom: group === undefined
        ? null
        : groupConfig
        ? `[[groups]] ${groupConfig.name ?? groupConfig.match.join(", ")}`
        : `no [[groups]] entry matches ${channel}:${group}: the default (${DEFAULT_GROUP_CEILING})`,
      effective: trust,
      taint: TAINT_RULE,
    },
    tools,
    toolsDenied,
    memory: {
      read: decisions.filter((d) => d.read.allowed).map((d) => d.store),
      write: decisions.filter((d) => d.write.allowed).map((d) => d.store),
      decisions: decisions.map((d) => ({ store: d.store, read: d.read.rule, write: d.write.rule })),
    },
    sandbox: explainSandbox(
      config,
      principal,
      situation,
      route.user,
      // A group turn's tools work in the group's directory, the owner's too.
      group === undefined ? undefined : groupDirectoryName({
        channel,
        id: group,
        ...(groupConfig?.name === undefined ? {} : { name: groupConfig.name }),
      }),
    ),
    sections,
    sectionLines,
    notes,
  };
}
