/**
 * The contract between channels and the gateway: a channel turns what it received into an
 * `IncomingMessage` and answers with the `TurnOutcome`. The gateway decides everything else.
 * @module
 */
import type { AgentEvent, AgentToolSummary } from "../agent/agent_loop.ts";

/** A message as a channel received it. */
export interface IncomingMessage {
  /** Channel name, e.g. `http`, `terminal`. */
  channel: string;
  /** The sender's identifier on that channel (`bob` for `http:bob`). */
  sender: string;
  /** What they wrote. */
  text: string;
  /** A session id the sender asked to continue, if any. */
  session?: string;
  /**
   * The group chat the message was written in, as its match pattern names it after the
   * channel (`-1001234` for `telegram:-1001234`, `group:<id>` for `signal:group:<id>`); absent
   * in a direct chat.
   */
  group?: string;
  /**
   * In a group: whether the message addresses the agent (it mentions the bot, replies to one of
   * its messages, or is a `/command`). The channel decides; the group's `respond` setting says
   * what the gateway does with messages that do not.
   */
  addressed?: boolean;
  /** Other identifiers of the same sender on this channel (signal-cli gives number and uuid). */
  senderAliases?: string[];
  /** The sender's display name as the channel reports it (shown by `coop pairing list`). */
  senderName?: string;
  /** Cancels the turn (client gone, Ctrl-C, shutdown). */
  signal?: AbortSignal;
  /** Receives the turn as it happens (streamed text, tool calls), for live channels. */
  onEvent?: (event: TurnEvent) => void;
}

/** Something that happened during a turn (streamed text, tool calls): the agent loop's events. */
export type TurnEvent = AgentEvent;

/** One tool call of the turn, as reported to the caller (`sandboxed`, bash's `exitCode`). */
export type ToolSummary = AgentToolSummary;

/** A file the turn sends to the chat (`send_file`): a Telegram document, a Signal attachment. */
export interface OutgoingFile {
  /** The file's name as the recipient sees it (no directory). */
  name: string;
  /** Its media type, e.g. `text/plain`. */
  mediaType: string;
  /** Its content (bounded by the tool's size cap). */
  bytes: Uint8Array;
}

/** The gateway's answer to one message. */
export interface TurnOutcome {
  /** What to send back; empty with `silent` set. */
  reply: string;
  /**
   * Send nothing: a group message that did not address the agent, kept as context for the
   * group's next turn.
   */
  silent?: boolean;
  /** Files to send after the reply. */
  files?: OutgoingFile[];
  /** The session the turn was recorded in (new when none was given). */
  session: string;
  tools: ToolSummary[];
}

/** Runs one turn; the gateway implements it, channels call it. */
export type TurnHandler = (message: IncomingMessage) => Promise<TurnOutcome>;
