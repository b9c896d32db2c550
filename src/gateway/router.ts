/**
 * The router: which configured user sent a message, and under which group ceiling.
 * @module
 */
import {
  leastTrusted,
  PUBLIC_NAME,
  TERMINAL_OWNER_NAME,
  type TrustLevel,
} from "../trust/trust_level.ts";
import type { Principal } from "../trust/authorization.ts";
import type { GroupConfig, UserConfig } from "../config/config.ts";
import { patternMatches } from "../trust/match_pattern.ts";

/** Where a message came from. */
export interface MessageOrigin {
  /** Channel name, e.g. `http`. */
  channel: string;
  /** The sender's identifier on that channel, e.g. `bob`. */
  sender: string;
  /** Other identifiers of the same sender (Signal's number and uuid): any may match a user. */
  aliases?: readonly string[];
  /** The group chat's identifier when the message came from a group. */
  group?: string;
}

/** What the router needs from config. */
export interface RoutingConfig {
  /** `[[users]]`. */
  users: readonly UserConfig[];
  /** `[[groups]]`. */
  groups: readonly GroupConfig[];
  /** `[sandbox]`. */
  sandbox: { enabled: boolean };
}

/** People paired with `coop pairing approve`, as users: each one's exact patterns. */
export type PairedUsers = readonly UserConfig[];

/** The router's answer: who is speaking and the ceiling of the chat they spoke in. */
export interface Route {
  /** The principal; `user` is undefined for a default principal. */
  principal: Principal;
  /** The configured user, when one matched. */
  user?: UserConfig;
  /** Group ceiling, or null outside a group. */
  ceiling: TrustLevel | null;
  /** The `[[groups]]` entry of the group chat, when one matched. */
  group?: GroupConfig;
  /** Why this principal was chosen, for logs. */
  reason: "matched" | "paired" | "terminal_default_owner" | "unmatched_public";
}

/** What `routeSender` needs: routing config plus `[channels.terminal] user`. */
export interface SenderRoutingConfig extends RoutingConfig {
  /** `[channels]`, for the terminal's configured user. */
  channels: { terminal?: { user?: string } };
}

/**
 * Who a channel sender is, as the gateway routes every message: `[channels.terminal] user`
 * names the terminal's user outright; everyone else goes through `routeMessage`.
 */
export function routeSender(
  config: SenderRoutingConfig,
  origin: MessageOrigin,
  paired: PairedUsers = [],
): Route {
  const terminalUser = config.channels.terminal?.user;
  const user = origin.channel === "terminal" && terminalUser
    ? config.users.find((u) => u.name === terminalUser)
    : undefined;
  return user ? routeUser(user) : routeMessage(config, origin, paired);
}

/** The route of a configured user addressed by name (cron jobs, `[channels.terminal] user`). */
export function routeUser(user: UserConfig): Route {
  return {
    principal: { name: user.name, trust: user.trust },
    user,
    ceiling: null,
    reason: "matched",
  };
}

/**
 * Whose sessions a route's turns belong to: a configured user's own, or — for the default
 * principals (`public`, the terminal's `owner`) — the sender's, so that two unknown callers
 * never share a history.
 */
export function sessionOwner(route: Route, origin: MessageOrigin): string {
  return route.user ? route.principal.name : `${route.principal.name}:${origin.sender}`;
}

/** The ceiling of groups no `[[groups]]` entry matches. */
export const DEFAULT_GROUP_CEILING: TrustLevel = "familiar";

/** The `[[groups]]` entry whose patterns match group chat `group` on `channel`, if any. */
export function matchGroup(
  groups: readonly GroupConfig[],
  channel: string,
  group: string,
): GroupConfig | undefined {
  return groups.find((g) => g.match.some((p) => patternMatches(p, channel, group)));
}

/**
 * The trust ceiling of a chat: null in a direct chat, else its `[[groups]]` entry's, or
 * `DEFAULT_GROUP_CEILING` for a group no entry matches — never above `MAX_GROUP_CEILING`.
 */
export function chatCeiling(
  config: Pick<RoutingConfig, "groups">,
  channel: string,
  group: string | undefined,
): TrustLevel | null {
  if (group === undefined) return null;
  const ceiling = matchGroup(config.groups, channel, group)?.ceiling ?? DEFAULT_GROUP_CEILING;
  return leastTrusted(ceiling, MAX_GROUP_CEILING);
}

/**
 * The most trust anyone has in a group, whatever its entry says: the owner in a group is
 * sandboxed (DESIGN §1; `coop check` rejects a group ceiling of `owner`).
 */
export const MAX_GROUP_CEILING: TrustLevel = "full";

/**
 * Identifies the sender of a message: a configured user by an exact pattern, then a paired
 * person, then a configured user by a wildcard. Unmatched terminal senders are the owner when
 * the sandbox is enabled; every other unmatched sender is public.
 */
export function routeMessage(
  config: RoutingConfig,
  origin: MessageOrigin,
  paired: PairedUsers = [],
): Route {
  const ceiling = chatCeiling(config, origin.channel, origin.group);
  const group = origin.group === undefined
    ? undefined
    : matchGroup(config.groups, origin.channel, origin.group);
  const where = { ceiling, ...(group ? { group } : {}) };
  const ids = [origin.sender, ...origin.aliases ?? []];
  const addresses = ids.map((id) => `${origin.channel}:${id}`);
  const exactly = (u: UserConfig) => u.match.some((p) => addresses.includes(p));
  // Exact patterns win over wildcards, so `telegram:*` cannot shadow a named or paired person.
  const exact = config.users.find(exactly);
  const pairedUser = exact ? undefined : paired.find(exactly);
  if (pairedUser) {
    const principal = { name: pairedUser.name, trust: pairedUser.trust };
    return { principal, user: pairedUser, ...where, reason: "paired" };
  }
  const user = exact ??
    config.users.find((u) =>
      u.match.some((p) => ids.some((id) => patternMatches(p, origin.channel, id)))
    );
  if (user) {
    return { principal: { name: user.name, trust: user.trust }, user, ...where, reason: "matched" };
  }
  if (origin.channel === "terminal" && config.sandbox.enabled) {
    return {
      principal: { name: TERMINAL_OWNER_NAME, trust: "owner" },
      ...where,
      reason: "terminal_default_owner",
    };
  }
  return {
    principal: { name: PUBLIC_NAME, trust: "public" },
    ...where,
    reason: "unmatched_public",
  };
}
