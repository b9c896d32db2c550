/**
 * The provider-neutral contract between the agent loop and an LLM API: one request in, a stream
 * of events out. Wire formats (Anthropic, OpenAI-compatible) live in their own modules.
 * @module
 */

/** A tool as the model sees it. */
export interface ToolSpec {
  /** The name the model calls it by, e.g. `bash`. */
  name: string;
  /** One paragraph for the model. */
  description: string;
  /** JSON Schema of the arguments (an object schema). */
  parameters: Record<string, unknown>;
}

/** A tool call the model made, with its arguments already parsed from JSON. */
export interface ToolCallRequest {
  /** The provider's id for this call; the result must quote it. */
  id: string;
  /** The tool name. */
  name: string;
  /** The parsed arguments (normally an object; whatever the model sent); `{}` when unusable. */
  arguments: unknown;
  /**
   * Set when the arguments could not be used (not JSON, or over `MAX_TOOL_ARGUMENT_BYTES`):
   * the loop answers the call with this text as a tool error and never runs it.
   */
  argumentsError?: string;
}

/** The result of one tool call, sent back to the model. */
export interface ToolResultContent {
  /** The `ToolCallRequest.id` this answers. */
  toolCallId: string;
  /** The tool name (OpenAI-compatible servers such as Ollama want it). */
  name: string;
  /** What the model reads (already truncated by the executor). */
  content: string;
  /** True when `content` describes a failure. */
  isError: boolean;
}

/** One message of a conversation, independent of any wire format. */
export type ChatMessage =
  | { role: "user"; content: string }
  | { role: "assistant"; text: string; toolCalls: ToolCallRequest[] }
  | { role: "tool"; results: ToolResultContent[] };

/** Why the model stopped. */
export type StopReason = "end_turn" | "tool_use" | "max_tokens" | "other";

/** Token counts, when the server reports them. */
export interface Usage {
  inputTokens: number;
  outputTokens: number;
}

/** One request to a provider. */
export interface ProviderRequest {
  /** Model id as the provider knows it, e.g. `claude-sonnet-4-5` (no `provider/` prefix). */
  model: string;
  /** The system prompt. */
  system: string;
  /** The conversation so far, oldest first. */
  messages: readonly ChatMessage[];
  /** Tools the model may call; empty means none are offered. */
  tools: readonly ToolSpec[];
  /** Cap on generated tokens. */
  maxTokens: number;
}

/** What a provider streams back; `stop` is always the last event of a successful stream. */
export type ProviderEvent =
  | { type: "text"; text: string }
  | { type: "tool_call"; call: ToolCallRequest }
  | { type: "stop"; reason: StopReason; usage: Usage | null };

/** An LLM API behind one wire format. */
export interface Provider {
  /** The configured provider name, e.g. `anthropic`. */
  readonly name: string;
  /**
   * Streams one response. Throws `ProviderError` (missing key, auth, HTTP, malformed stream);
   * aborting `signal` stops the request and the stream with the signal's reason.
   */
  stream(request: ProviderRequest, signal?: AbortSignal): AsyncIterable<ProviderEvent>;
}
