/**
 * `runTurn`: one user message in, the model's reply out — asking the provider, running the tool
 * calls it makes through the caller's executor, and feeding the results back until it answers,
 * hits the iteration cap, or is cancelled.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { CoopError } from "../errors/coop_error.ts";
import type { ChatMessage, Provider, ToolCallRequest, ToolSpec, Usage } from "./provider.ts";
import { runToolCalls } from "./tool_calls.ts";

const log = getLogger(["coop", "agent"]);

/** A tool offered to the model, and where it would run for this principal. */
export interface AgentTool extends ToolSpec {
  /** True when calls run in the sandbox (false: on the host, or in the gateway). */
  sandboxed: boolean;
}

/** What running one tool call produced. */
export interface ToolExecution {
  /** The text the model reads (the executor has already truncated it). */
  content: string;
  /** True when `content` describes a failure (refused, invalid arguments, non-zero exit). */
  isError: boolean;
  /** True when the call ran in the sandbox. */
  sandboxed: boolean;
  /** bash's exit code; absent or null for other tools and refused calls. */
  exitCode?: number | null;
}

/** Runs one tool call; must stop the tool when `signal` aborts. */
export type ExecuteTool = (
  name: string,
  args: unknown,
  signal: AbortSignal,
) => Promise<ToolExecution>;

/** Something that happened during a turn; channels receive these as `TurnEvent`. */
export type AgentEvent =
  | { type: "text"; text: string }
  | { type: "tool_start"; name: string; sandboxed: boolean; summary: string }
  | {
    type: "tool_end";
    name: string;
    sandboxed: boolean;
    exitCode: number | null;
    isError: boolean;
  };

/** One tool call of the turn, as reported to the caller (and in the HTTP reply's `tools`). */
export interface AgentToolSummary {
  name: string;
  /** True when the call ran in the sandbox (false: on the host, the owner's, or refused). */
  sandboxed: boolean;
  /** bash's exit code; null for other tools or when the call was refused. */
  exitCode: number | null;
}

/** Why the turn ended. */
export type TurnStopReason = "end_turn" | "max_tokens" | "max_iterations" | "cancelled";

/** Everything `runTurn` needs. */
export interface TurnOptions {
  provider: Provider;
  /** Model id for the provider (without the `provider/` prefix). */
  model: string;
  /** The system prompt (see `loadSystemPrompt`). */
  system: string;
  /** The session's earlier messages, oldest first. */
  history: readonly ChatMessage[];
  /** What the user just wrote. */
  userText: string;
  /** Tools the principal may use (see `allowedTools`); others are refused without running. */
  tools: readonly AgentTool[];
  /** Runs an offered tool (normally the `ToolExecutor`, which authorizes again). */
  executeTool: ExecuteTool;
  /** Model calls allowed in this turn. */
  maxIterations: number;
  /** Cap on tokens per model response. Default 8192. */
  maxTokens?: number;
  /** Cancels the turn: stops the stream and the running tool. */
  signal?: AbortSignal;
  /** Receives streamed text and tool calls as they happen. */
  onEvent?: (event: AgentEvent) => void;
  /**
   * Receives each message of `TurnResult.messages` as soon as it is complete, so the caller can
   * persist it before the turn goes on (a crash then loses at most the message in progress).
   */
  onMessage?: (message: ChatMessage) => void;
  /**
   * Receives each model response's token usage as the provider reports it, as soon as it ends
   * (budgets count it even when a later call of the turn fails).
   */
  onUsage?: (usage: Usage) => void;
}

/** What a turn produced. */
export interface TurnResult {
  /** Every assistant text of the turn, joined by blank lines (plus a note when stopped early). */
  reply: string;
  /**
   * Messages to append to the session after the user's message (which is not included:
   * persist it before calling). Always a valid history: every tool call has its result.
   */
  messages: ChatMessage[];
  /** The tool calls, in order. */
  tools: AgentToolSummary[];
  stopReason: TurnStopReason;
  /** Tokens used across the turn's model calls (zero when the server does not say). */
  usage: Usage;
}

/** A turn that failed (provider error); `messages` holds what completed, still valid history. */
export class TurnError extends CoopError {
  /** Completed messages to persist, as in `TurnResult.messages`. */
  readonly messages: ChatMessage[];
  /** Tool calls that ran before the failure. */
  readonly tools: AgentToolSummary[];
  constructor(
    cause: Error & { code?: string },
    messages: ChatMessage[],
    tools: AgentToolSummary[],
  ) {
    super(cause.code ?? "agent.failed", cause.message, { cause });
    this.name = "TurnError";
    this.messages = messages;
    this.tools = tools;
  }
}

/** The note appended to the reply when the iteration cap stops a turn. */
export function iterationCapNote(maxIterations: number): string {
  return `[stopped: this turn reached its limit of ${maxIterations} model calls ` +
    '([agent] max_iterations) before finishing; say "continue" to go on]';
}

/** What one model call produced. */
interface ModelResponse {
  /** The text streamed (already shown to the user through `onEvent`). */
  text: string;
  /** The tool calls to run; none when the stream was cancelled (half-streamed calls are dropped). */
  calls: ToolCallRequest[];
  /** The provider's stop reason. */
  stop: string;
  /** True when the signal aborted the stream. */
  cancelled: boolean;
}

/** The turn so far: the conversation the model sees, what to persist, and the tallies. */
class TurnRecord {
  readonly #options: TurnOptions;
  readonly conversation: ChatMessage[];
  readonly messages: ChatMessage[] = [];
  readonly summaries: AgentToolSummary[] = [];
  readonly #texts: string[] = [];
  readonly usage: Usage = { inputTokens: 0, outputTokens: 0 };

  constructor(options: TurnOptions) {
    this.#options = options;
    this.conversation = [...options.history, { role: "user", content: options.userText }];
  }

  /** Persists a completed message: into the conversation, the result, and `onMessage`. */
  append(message: ChatMessage): void {
    this.conversation.push(message);
    this.messages.push(message);
    this.#options.onMessage?.(message);
  }

  /** Persists one model response: its text joins the reply, text and calls the history. */
  recordResponse({ text, calls }: ModelResponse): void {
    if (text) this.#texts.push(text);
    if (text || calls.length > 0) this.append({ role: "assistant", text, toolCalls: calls });
  }

  /** Ends the turn: the reply (plus `note`), logged with the tallies. */
  finish(stopReason: TurnStopReason, note?: string): TurnResult {
    const { provider, model } = this.#options;
    const reply = [...this.#texts, ...(note ? [note] : [])].join("\n\n");
    log.info("agent.turn {stopReason}: {toolCalls} tool calls, {outputTokens} output tokens", {
      provider: provider.name,
      model,
      stopReason,
      toolCalls: this.summaries.length,
      ...this.usage,
    });
    const { messages, summaries: tools, usage } = this;
    return { reply, messages, tools, stopReason, usage };
  }
}

/**
 * Streams one model response, forwarding text as it arrives and adding up usage. A cancel
 * returns what was shown; any other failure throws `TurnError` with the history so far.
 */
async function streamResponse(
  options: TurnOptions,
  { record, specs, signal }: { record: TurnRecord; specs: ToolSpec[]; signal: AbortSignal },
): Promise<ModelResponse> {
  const response: ModelResponse = { text: "", calls: [], stop: "other", cancelled: false };
  try {
    const stream = options.provider.stream({
      model: options.model,
      system: options.system,
      messages: record.conversation,
      tools: specs,
      maxTokens: options.maxTokens ?? 8192,
    }, signal);
    for await (const event of stream) {
      if (event.type === "text") {
        response.text += event.text;
        options.onEvent?.({ type: "text", text: event.text });
      } else if (event.type === "tool_call") {
        response.calls.push(event.call);
      } else {
        response.stop = event.reason;
        record.usage.inputTokens += event.usage?.inputTokens ?? 0;
        record.usage.outputTokens += event.usage?.outputTokens ?? 0;
        if (event.usage) options.onUsage?.(event.usage);
      }
    }
  } catch (error) {
    // Keep what the user already saw; half-streamed tool calls are dropped.
    if (signal.aborted) return { ...response, calls: [], cancelled: true };
    if (error instanceof Error) throw new TurnError(error, record.messages, record.summaries);
    throw error;
  }
  return response;
}

/** Whether the turn ends after this model call (and its tools), and why; null goes on. */
function stopAfter(
  response: ModelResponse,
  state: { aborted: boolean; lastIteration: boolean },
): TurnStopReason | null {
  if (response.cancelled) return "cancelled";
  if (response.calls.length === 0) {
    return response.stop === "max_tokens" ? "max_tokens" : "end_turn";
  }
  if (state.aborted) return "cancelled";
  if (state.lastIteration) return "max_iterations";
  return null;
}

/**
 * Runs one turn of the conversation. Per model call: stream the response (`streamResponse`),
 * persist it (`TurnRecord`), run the tools it asks for and persist their results
 * (`runToolCalls`), then decide whether to go on (`stopAfter`).
 *
 * @example
 * ```ts
 * const { provider, model } = selectModel(config.agent.model, config.providers);
 * const result = await runTurn({
 *   provider, model, system, history, userText: "hi", tools: [], maxIterations: 25,
 *   executeTool: () => Promise.reject(new Error("no tools")),
 * });
 * result.reply;
 * ```
 */
export async function runTurn(options: TurnOptions): Promise<TurnResult> {
  const { tools, maxIterations } = options;
  const signal = options.signal ?? new AbortController().signal;
  const offered = new Map(tools.map((t) => [t.name, t]));
  const specs: ToolSpec[] = tools.map(({ name, description, parameters }) => ({
    name,
    description,
    parameters,
  }));
  const record = new TurnRecord(options);
  const capNote = (reason: TurnStopReason) =>
    reason === "max_iterations" ? iterationCapNote(maxIterations) : undefined;

  for (let iteration = 1; iteration <= maxIterations; iteration++) {
    if (signal.aborted) return record.finish("cancelled");
    const response = await streamResponse(options, { record, specs, signal });
    record.recordResponse(response);
    const lastIteration = iteration === maxIterations;
    if (!response.cancelled && response.calls.length > 0) {
      const results = await runToolCalls(response.calls, {
        offered,
        executeTool: options.executeTool,
        signal,
        onEvent: options.onEvent,
        lastIteration,
        summaries: record.summaries,
      });
      record.append({ role: "tool", results });
    }
    const stop = stopAfter(response, { aborted: signal.aborted, lastIteration });
    if (stop) return record.finish(stop, capNote(stop));
  }
  // Only reached with maxIterations < 1: no model call was allowed at all.
  return record.finish("max_iterations", iterationCapNote(maxIterations));
}
