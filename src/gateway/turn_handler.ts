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
  /** Cancels the turn (client gone, Ctrl-C, shutdown). */
  signal?: AbortSignal;
  /** Receives the turn as it happens (streamed text, tool calls), for live channels. */
  onEvent?: (event: TurnEvent) => void;
}

/** Something that happened during a turn (streamed text, tool calls): the agent loop's events. */
export type TurnEvent = AgentEvent;

/** One tool call of the turn, as reported to the caller (`sandboxed`, bash's `exitCode`). */
export type ToolSummary = AgentToolSummary;

/** The gateway's answer to one message. */
export interface TurnOutcome {
  reply: string;
  /** The session the turn was recorded in (new when none was given). */
  session: string;
  tools: ToolSummary[];
}

/** Runs one turn; the gateway implements it, channels call it. */
export type TurnHandler = (message: IncomingMessage) => Promise<TurnOutcome>;
