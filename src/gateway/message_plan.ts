/**
 * What the gateway does with a routed message: answer a chat command itself, keep a group
 * message that did not address the agent as context, or run a turn (in the sender's session, or
 * in the group's session and workspace).
 * @module
 */
import { type ChatCommand, parseChatCommand } from "./chat_commands.ts";
import {
  contextTrust,
  type GroupContext,
  groupSessionKey,
  groupWorkspace,
  labelledText,
} from "./group_chat.ts";
import { type Route, sessionOwner } from "./router.ts";
import type { IncomingMessage } from "./turn_handler.ts";

/** The plan for one message. */
export type MessagePlan =
  | { kind: "command"; command: ChatCommand }
  | ({ kind: "context" } & GroupContext)
  | {
    kind: "turn";
    /** The session key's user: the sender's (`sessionOwner`) or the group's. */
    sessionUser: string;
    session?: string;
    /** In a group: the chat's id and its directory under the workspace. */
    group?: { id: string; dir: string };
    /** The text as the model reads it (labelled with its sender in a group). */
    text: string;
  };

/** Plans `message` from `route` (pairing has been decided before). */
export function planMessage(message: IncomingMessage, route: Route): MessagePlan {
  const quiet = message.group !== undefined && !message.addressed &&
    (route.group?.respond ?? "mention") === "mention";
  // A group message that does not address the agent is context, even one that looks like a
  // command (`/status@another_bot`).
  const command = quiet ? null : parseChatCommand(message.text);
  if (command) return { kind: "command", command };
  if (message.group === undefined) {
    return {
      kind: "turn",
      sessionUser: sessionOwner(route, message),
      ...(message.session === undefined ? {} : { session: message.session }),
      text: message.text,
    };
  }
  const key = groupSessionKey(message.channel, message.group);
  const text = labelledText(route, message);
  if (quiet) return { kind: "context", key, text, trust: contextTrust(route) };
  return {
    kind: "turn",
    sessionUser: key.user,
    session: key.session,
    group: { id: message.group, dir: groupWorkspace(route, message.channel, message.group) },
    text,
  };
}
