/**
 * `/clear` from any channel: which session it ends (the sender's own in a direct chat — the
 * messenger's chat session or the HTTP request's `session` — or the group chat's shared one),
 * whether the sender may (`authorize()`, `session_clear`), and whose environment session layers
 * go with it. The gateway then deletes the history, stops the live sandbox and discards the
 * `upper = "session"` layers (`Gateway.handle`).
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { errorMessage } from "../errors/coop_error.ts";
import type { SessionKey } from "../state/session_store.ts";
import type { CoopConfig } from "../config/config.ts";
import type { SessionSandboxes } from "../tools/session_sandboxes.ts";
import { endEnvironmentSession } from "./environment_sessions.ts";
import { authorize } from "../trust/authorization.ts";
import { TurnRefusedError } from "../errors/turn_refused.ts";
import type { EnvironmentSession } from "../environments/environment_mounts.ts";
import { groupSandboxSession, groupSandboxSessionId, groupSessionKey } from "./group_chat.ts";
import { type Route, sessionOwner } from "./router.ts";
import type { IncomingMessage } from "./turn_handler.ts";

const log = getLogger(["coop", "gateway"]);

/** A session `/clear` ends, and what else ends with it. */
export interface ClearTarget {
  /** The stored session (history). */
  key: SessionKey;
  /** The live sandboxes that end: the session's, or in a group each known person's there. */
  sandboxes: readonly SessionKey[];
  /** The environment session whose `upper = "session"` layers are discarded. */
  environmentSession: EnvironmentSession;
  /** Whose layers of that session: the sender's, or in a group every known person's. */
  people: readonly string[];
}

/** The reply to a `/clear` the sender may not give here. */
export interface ClearRefusal {
  refusal: string;
}

/**
 * What `/clear` from `message` ends, or why not. `knownPeople` are the configured and paired
 * users' names (anyone of them may have run commands in a group's session). Throws
 * `TurnRefusedError` (HTTP 400) when a direct message names no session (HTTP without `session`).
 */
export function clearTarget(
  message: IncomingMessage,
  route: Route,
  sandboxEnabled: boolean,
  knownPeople: readonly string[],
): ClearTarget | ClearRefusal {
  const shared = message.group !== undefined;
  const decision = authorize(route.principal, {
    channel: message.channel,
    ceiling: route.ceiling,
    contributors: [],
    sandboxEnabled,
  }, { kind: "session_clear", shared });
  if (!decision.allowed) {
    return {
      refusal: `Only someone known in this group (trust familiar or more; here you have ` +
        `${decision.effectiveTrust}) can clear its shared session.`,
    };
  }
  if (message.group !== undefined) {
    // Each member's commands in the group ran in a sandbox session of their own, named after
    // the group (`groupSandboxSession`).
    const { channel, group } = message;
    const sandboxes = knownPeople.map((person) => groupSandboxSession(channel, group, person));
    return {
      key: groupSessionKey(channel, group),
      sandboxes,
      environmentSession: { channel, id: groupSandboxSessionId(group) },
      people: knownPeople,
    };
  }
  if (message.session === undefined) {
    throw new TurnRefusedError(
      "gateway.clear_needs_session",
      "/clear names no session: send it with the session to end",
      {
        httpStatus: 400,
        reply: 'Which session? Send /clear with the session to end (HTTP: {"text": "/clear", ' +
          '"session": ID}).',
      },
    );
  }
  const key = {
    channel: message.channel,
    user: sessionOwner(route, message),
    session: message.session,
  };
  return {
    key,
    sandboxes: [key],
    environmentSession: { channel: message.channel, id: message.session },
    people: [route.principal.name],
  };
}

/**
 * Stops `target`'s live sandbox, then discards its `upper = "session"` layers (failures are
 * logged by `endEnvironmentSession`; the session has ended either way).
 */
export async function endSession(
  config: CoopConfig,
  sandboxes: SessionSandboxes,
  target: ClearTarget,
): Promise<void> {
  // The live sandboxes go first: a session upper is removed only once nothing mounts it.
  await Promise.all(target.sandboxes.map((key) =>
    sandboxes.stop(key).catch((error) => {
      log.warn("session.clear_sandbox_stop_failed {user}: {reason}", {
        event: "session.clear_sandbox_stop_failed",
        channel: key.channel,
        user: key.user,
        reason: errorMessage(error),
      });
    })
  ));
  for (const person of target.people) {
    await endEnvironmentSession(config, person, target.environmentSession);
  }
}

/** The reply once a session is ended: whether it had any history. */
export function clearedReply(hadHistory: boolean): string {
  return hadHistory
    ? "Session cleared: its history, live sandbox and session layer are gone; the next message " +
      "starts a new session."
    : "Nothing stored for this session; its live sandbox and session layer (if any) are gone.";
}
