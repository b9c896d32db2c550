/**
 * Group chats as the gateway keeps them: one session per group (every member's messages, the
 * ones that did not address the agent too, each stored with its sender and trust), each message
 * labelled with who wrote it, and one workspace directory per group (`group_directories.ts`).
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { SessionKey, SessionStore } from "../state/session_store.ts";
import type { SessionQueue } from "./session_queue.ts";
import type { EnvironmentSession } from "../environments/environment_mounts.ts";
import { effectiveTrust } from "../trust/authorization.ts";
import type { TrustLevel } from "../trust/trust_level.ts";
import { groupDirectoryName } from "../config/group_directories.ts";
import type { Route } from "./router.ts";
import type { IncomingMessage, TurnOutcome } from "./turn_handler.ts";

const log = getLogger(["coop", "gateway"]);

/** The session id every group's one session has. */
export const GROUP_SESSION_ID = "group";

/**
 * The group's session: its `user` is `group:<chat id>`, which no user name can be (names have no
 * `:`), so it is nobody's own history.
 */
export function groupSessionKey(channel: string, group: string): SessionKey {
  return { channel, user: `group:${group}`, session: GROUP_SESSION_ID };
}

/**
 * Where `person`'s commands in a group run: a sandbox session of their own, named after the
 * group (`group:<chat id>`: their live sandbox, `COOP_SESSION`, their `upper = "session"`
 * layer). One per person and group — never shared with another member or another group, and
 * under the person's name, so that a reload which changes them ends it.
 */
export function groupSandboxSession(channel: string, group: string, person: string): SessionKey {
  return { channel, user: person, session: groupSandboxSessionId(group) };
}

/** The session id of every member's sandbox session in a group: `group:<chat id>`. */
export function groupSandboxSessionId(group: string): string {
  return `group:${group}`;
}

/**
 * The environment session (`upper = "session"` layers, `COOP_SESSION`) of a stored chat session:
 * a direct chat's own id; for a group's one session (user `group:<chat id>`) the id its members'
 * sandbox sessions share, `group:<chat id>` (what `coop sandbox clean` keeps).
 */
export function environmentSessionOf(key: SessionKey): EnvironmentSession {
  const group = key.session === GROUP_SESSION_ID && key.user.startsWith("group:")
    ? key.user.slice("group:".length)
    : undefined;
  return {
    channel: key.channel,
    id: group === undefined ? key.session : groupSandboxSessionId(group),
  };
}

/** The group's directory name under the workspace, from its `[[groups]]` name or its id. */
export function groupWorkspace(route: Route, channel: string, group: string): string {
  return groupDirectoryName({
    channel,
    id: group,
    ...(route.group?.name === undefined ? {} : { name: route.group.name }),
  });
}

/**
 * The text as the model reads it in a group: who wrote it (user name, trust, and for someone
 * unknown their address and the display name they chose) on a line before it.
 */
export function labelledText(route: Route, message: IncomingMessage): string {
  const { principal } = route;
  const who = route.user
    ? principal.name
    : `${principal.name} ${message.channel}:${message.sender}${
      message.senderName === undefined ? "" : ` ${JSON.stringify(message.senderName)}`
    }`;
  return `[${who}, trust ${contextTrust(route)}]\n${message.text}`;
}

/** The trust a group message is stored at: its sender's, under the group's ceiling. */
export function contextTrust(route: Route): TrustLevel {
  return effectiveTrust(route.principal, { ceiling: route.ceiling, contributors: [] });
}

/** A group message kept for the group's next turn instead of answered. */
export interface GroupContext {
  /** The group's session. */
  key: SessionKey;
  /** The labelled text. */
  text: string;
  /** Its sender's trust under the group's ceiling. */
  trust: TrustLevel;
}

/**
 * Stores a group message that did not address the agent in the group's session, with its sender
 * and trust, for the group's next turn to read — and be lowered by (`TurnTaint.fromHistory`).
 * It waits for any turn of the group in progress, so it never lands inside one.
 */
export function keepAsContext(
  sessions: SessionStore,
  queue: SessionQueue,
  context: GroupContext,
  principal: string,
): Promise<TurnOutcome> {
  const { key, text, trust } = context;
  return queue.after(key, async () => {
    // Committed now; on disk with the next shared fsync of the WAL (group commit), which the
    // channel waits for before it takes the message as handled.
    sessions.append(key, { role: "user", content: text, principal, trust }, { durable: false });
    log.info("gateway.group.context", {
      event: "gateway.group.context",
      channel: key.channel,
      group: key.user,
      principal,
      trust,
    });
    await sessions.flush();
    return { reply: "", silent: true, session: key.session, tools: [] };
  });
}
