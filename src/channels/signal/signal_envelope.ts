/**
 * What a signal-cli `receive` event says, as the gateway's `IncomingMessage`. The event's data
 * is `{ envelope, account }` (signal-cli-jsonrpc(5)); a `dataMessage` in the envelope is what a
 * person wrote: its `message`, `groupInfo.groupId` in a group, `mentions` and `quote`.
 * @module
 */
import type { IncomingMessage } from "../../gateway/turn_handler.ts";

/** The channel name in match patterns: `signal:<number>`, `signal:<uuid>`, `signal:group:<id>`. */
export const SIGNAL = "signal";

/** The parts of a signal-cli envelope the channel reads. */
export interface SignalEnvelope {
  source?: string;
  sourceNumber?: string | null;
  sourceUuid?: string | null;
  sourceName?: string | null;
  timestamp?: number;
  dataMessage?: {
    timestamp?: number;
    message?: string | null;
    groupInfo?: { groupId?: string } | null;
    mentions?: Array<{ number?: string | null; uuid?: string | null }> | null;
    quote?:
      | { author?: string | null; authorNumber?: string | null; authorUuid?: string | null }
      | null;
  } | null;
}

/** A `receive` event's data. */
export interface SignalReceive {
  envelope?: SignalEnvelope;
  account?: string;
}

/** A message the channel answers, with where the answer goes. */
export interface SignalText {
  incoming: IncomingMessage;
  /** `group:<groupId>` in a group, else the sender (its queue and its session). */
  chat: string;
  /** The group to answer in. */
  groupId?: string;
  /** The person to answer in a direct chat (number, else uuid). */
  recipient: string;
  /** The message's timestamp and author, to quote it in a group answer. */
  quote: { timestamp: number; author: string };
}

/** The chat a `receive` event belongs to (its queue), or `"none"`. */
export function signalChat(data: SignalReceive): string {
  const envelope = data.envelope;
  const groupId = envelope?.dataMessage?.groupInfo?.groupId;
  if (groupId) return `group:${groupId}`;
  return envelope?.sourceNumber ?? envelope?.sourceUuid ?? envelope?.source ?? "none";
}

/** Session ids allow A-Z a-z 0-9 _ -: base64's `+` and `/` become `-` and `_` (one to one). */
function sessionFor(chat: string): string {
  return `sg-${
    chat.replace(/^group:/, "g").replaceAll("+", "-").replaceAll("/", "_")
      .replaceAll("=", "")
  }`.slice(0, 64);
}

/**
 * Reads a person's text message (direct or group) to `account` (whose uuid, when known, also
 * counts as ours in mentions and quotes); null for receipts, typing, sync messages from our own
 * devices, and messages without text.
 */
export function readSignalText(
  data: SignalReceive,
  account: string,
  accountUuid?: string,
): SignalText | null {
  const envelope = data.envelope;
  const message = envelope?.dataMessage;
  const text = message?.message;
  if (!envelope || !message || typeof text !== "string" || text.trim() === "") return null;
  if (data.account !== undefined && data.account !== account) return null;
  const ours = (id: string | null | undefined) =>
    id !== undefined && id !== null && (id === account || id === accountUuid);
  const number = envelope.sourceNumber ?? undefined;
  const uuid = envelope.sourceUuid ?? undefined;
  const sender = number ?? uuid ?? envelope.source;
  if (!sender || ours(sender)) return null;
  const aliases = [number, uuid].filter((id): id is string => id !== undefined && id !== sender);
  const groupId = message.groupInfo?.groupId ?? undefined;
  const chat = signalChat(data);
  const addressed = (message.mentions ?? []).some((m) => ours(m.number) || ours(m.uuid)) ||
    ours(message.quote?.authorNumber) || ours(message.quote?.authorUuid) ||
    ours(message.quote?.author) ||
    text.trimStart().startsWith("/");
  return {
    chat,
    recipient: sender,
    ...(groupId ? { groupId } : {}),
    quote: { timestamp: message.timestamp ?? envelope.timestamp ?? 0, author: sender },
    incoming: {
      channel: SIGNAL,
      sender,
      text,
      session: sessionFor(chat),
      ...(aliases.length ? { senderAliases: aliases } : {}),
      ...(envelope.sourceName ? { senderName: envelope.sourceName } : {}),
      ...(groupId ? { group: `group:${groupId}`, addressed } : {}),
    },
  };
}
