/**
 * `runTurn`: one user message in, the model's reply out — asking the provider, running the tool
 * calls it makes through the caller's executor, and feeding the results back until it answers,
 * hits the iteration cap, or is cancelled.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { CoopError, errorMessage } from "../core/errors.ts";
import type {
  ChatMessage,
  Provider,
  ToolCallRequest,
  ToolResultContent,
  ToolSpec,
  Usage,
} from "./provider.ts";

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
  /** Runs an offered tool (normally the `SandboxExecutor`, which authorizes again). */
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

const CANCELLED_RESULT = "cancelled: the user stopped this turn before the tool finished";
const NOT_RUN_RESULT = "not run: the turn reached its iteration limit";

/** A one-line description of a tool call for channels (`ls -la`, a path, or the arguments). */
export function summarizeToolCall(args: unknown): string {
  const record = (args ?? {}) as Record<string, unknown>;
  const text = typeof record.command === "string"
    ? record.command
    : typeof record.path === "string"
    ? record.path
    : JSON.stringify(args) ?? "";
  return text.length > 200 ? text.slice(0, 199) + "…" : text;
}

/** How long a cancelled tool may take to report how it ended (e.g. killed, exit 137). */
const CANCEL_GRACE_MS = 2000;

/** Rejects a while after `signal` aborts: a tool that ignores the signal is abandoned. */
function abandonAfterAbort(signal: AbortSignal): { promise: Promise<never>; dispose(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort = () => {};
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => timer = setTimeout(() => reject(signal.reason), CANCEL_GRACE_MS);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  return {
    promise,
    dispose() {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    },
  };
}

/**
 * Runs one turn of the conversation.
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
  const { provider, tools, onEvent } = options;
  const signal = options.signal ?? new AbortController().signal;
  const offered = new Map(tools.map((t) => [t.name, t]));
  const specs: ToolSpec[] = tools.map(({ name, description, parameters }) => ({
    name,
    description,
    parameters,
  }));
  const conversation: ChatMessage[] = [
    ...options.history,
    { role: "user", content: options.userText },
  ];
  const messages: ChatMessage[] = [];
  const summaries: AgentToolSummary[] = [];
  const texts: string[] = [];
  const usage: Usage = { inputTokens: 0, outputTokens: 0 };
  const append = (message: ChatMessage) => {
    conversation.push(message);
    messages.push(message);
    options.onMessage?.(message);
  };
  const finish = (stopReason: TurnStopReason, note?: string): TurnResult => {
    const reply = [...texts, ...(note ? [note] : [])].join("\n\n");
    log.info("agent.turn {stopReason}: {toolCalls} tool calls, {outputTokens} output tokens", {
      provider: provider.name,
      model: options.model,
      stopReason,
      toolCalls: summaries.length,
      ...usage,
    });
    return { reply, messages, tools: summaries, stopReason, usage };
  };

  for (let iteration = 1; iteration <= options.maxIterations; iteration++) {
    if (signal.aborted) return finish("cancelled");
    let text = "";
    const calls: ToolCallRequest[] = [];
    let stop: string = "other";
    try {
      const stream = provider.stream({
        model: options.model,
        system: options.system,
        messages: conversation,
        tools: specs,
        maxTokens: options.maxTokens ?? 8192,
      }, signal);
      for await (const event of stream) {
        if (event.type === "text") {
          text += event.text;
          onEvent?.({ type: "text", text: event.text });
        } else if (event.type === "tool_call") {
          calls.push(event.call);
        } else {
          stop = event.reason;
          usage.inputTokens += event.usage?.inputTokens ?? 0;
          usage.outputTokens += event.usage?.outputTokens ?? 0;
        }
      }
    } catch (error) {
      if (signal.aborted) {
        // Keep what the user already saw; half-streamed tool calls are dropped.
        if (text) {
          texts.push(text);
          append({ role: "assistant", text, toolCalls: [] });
        }
        return finish("cancelled");
      }
      if (error instanceof Error) throw new TurnError(error, messages, summaries);
      throw error;
    }
    if (text) texts.push(text);
    if (text || calls.length > 0) append({ role: "assistant", text, toolCalls: calls });
    if (calls.length === 0) return finish(stop === "max_tokens" ? "max_tokens" : "end_turn");

    const lastIteration = iteration === options.maxIterations;
    const results: ToolResultContent[] = [];
    for (const call of calls) {
      const result = (content: string, isError: boolean) =>
        results.push({ toolCallId: call.id, name: call.name, content, isError });
      if (signal.aborted) {
        result(CANCELLED_RESULT, true);
        continue;
      }
      if (lastIteration) {
        result(NOT_RUN_RESULT, true);
        continue;
      }
      const tool = offered.get(call.name);
      if (!tool) {
        // Never reaches the executor: the model asked for something it was not offered.
        result(`tool "${call.name}" is not available in this conversation`, true);
        summaries.push({ name: call.name, sandboxed: false, exitCode: null });
        continue;
      }
      onEvent?.({
        type: "tool_start",
        name: call.name,
        sandboxed: tool.sandboxed,
        summary: summarizeToolCall(call.arguments),
      });
      let execution: ToolExecution;
      const abandon = abandonAfterAbort(signal);
      try {
        execution = await Promise.race([
          options.executeTool(call.name, call.arguments, signal),
          abandon.promise,
        ]);
      } catch (error) {
        execution = signal.aborted
          ? { content: CANCELLED_RESULT, isError: true, sandboxed: tool.sandboxed }
          : {
            content: `${call.name} failed: ${errorMessage(error)}`,
            isError: true,
            sandboxed: tool.sandboxed,
          };
      } finally {
        abandon.dispose();
      }
      const exitCode = execution.exitCode ?? null;
      summaries.push({ name: call.name, sandboxed: execution.sandboxed, exitCode });
      onEvent?.({
        type: "tool_end",
        name: call.name,
        sandboxed: execution.sandboxed,
        exitCode,
        isError: execution.isError,
      });
      result(execution.content, execution.isError);
    }
    append({ role: "tool", results });
    if (signal.aborted) return finish("cancelled");
    if (lastIteration) return finish("max_iterations", iterationCapNote(options.maxIterations));
  }
  // Only reached with maxIterations < 1: no model call was allowed at all.
  return finish("max_iterations", iterationCapNote(options.maxIterations));
}
