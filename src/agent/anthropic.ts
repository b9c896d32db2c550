/**
 * The Anthropic Messages API (`POST /v1/messages`, `stream: true`): request mapping and the
 * SSE event stream (`message_start` … `message_stop`) turned into `ProviderEvent`s. Sending,
 * retries, timeouts and tool-call assembly are shared (`sse_provider.ts`).
 * @module
 */
import type {
  ChatMessage,
  ProviderEvent,
  ProviderRequest,
  StopReason,
  ToolSpec,
  Usage,
} from "./provider.ts";
import { JsonCache, JsonText } from "./json_body.ts";
import {
  type DecodeContext,
  type ProviderSettings,
  SseProvider,
  type StreamDecoder,
  type WireFormat,
} from "./sse_provider.ts";
import type { SseEvent } from "./sse.ts";

/** The API version header Coop speaks. */
export const ANTHROPIC_VERSION = "2023-06-01";

/** The public endpoint, used when `base_url` is not set. */
export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";

/**
 * How to reach one Anthropic-format endpoint: `baseUrl` e.g. `https://api.anthropic.com`
 * (without `/v1`); `apiKey` is sent as `x-api-key` (null sends none: a local proxy adds it).
 */
export type AnthropicSettings = ProviderSettings;

type Block = Record<string, unknown>;
type WireMessage = { role: "user" | "assistant"; content: Block[] };

/** The role `message` has on the wire: tool results go back in a user message. */
function wireRole(message: ChatMessage): WireMessage["role"] {
  return message.role === "assistant" ? "assistant" : "user";
}

/** The content blocks `message` becomes (none for an assistant message with neither). */
function wireBlocks(message: ChatMessage): Block[] {
  if (message.role === "user") return [{ type: "text", text: message.content }];
  if (message.role === "assistant") {
    const blocks: Block[] = message.text ? [{ type: "text", text: message.text }] : [];
    for (const call of message.toolCalls) {
      blocks.push({ type: "tool_use", id: call.id, name: call.name, input: call.arguments });
    }
    return blocks;
  }
  return message.results.map((r) => ({
    type: "tool_result",
    tool_use_id: r.toolCallId,
    content: r.content,
    ...(r.isError ? { is_error: true } : {}),
  }));
}

/** Maps neutral messages to Anthropic's, merging neighbours with the same role. */
export function toAnthropicMessages(messages: readonly ChatMessage[]): WireMessage[] {
  const out: WireMessage[] = [];
  for (const message of messages) {
    const content = wireBlocks(message);
    if (content.length === 0) continue;
    const role = wireRole(message);
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...content);
    else out.push({ role, content });
  }
  return out;
}

/** Each message's blocks as JSON: a turn's messages are serialized once, not once per call. */
const blocksJson = new JsonCache<ChatMessage>();
/** The tool definitions as JSON, once per tool list (the agent loop's, one per turn). */
const toolsJson = new JsonCache<readonly ToolSpec[]>();

/** `toAnthropicMessages(messages)` as JSON text, from each message's cached blocks. */
function anthropicMessagesJson(messages: readonly ChatMessage[]): JsonText {
  const out: string[] = [];
  let role: WireMessage["role"] | null = null;
  let blocks: string[] = [];
  const close = () => {
    if (role !== null) out.push(`{"role":"${role}","content":[${blocks.join(",")}]}`);
  };
  for (const message of messages) {
    // "[a,b]" → "a,b": the blocks of merged neighbours join into one content array.
    const inner = blocksJson.text(message, wireBlocks).slice(1, -1);
    if (inner === "") continue;
    const next = wireRole(message);
    if (next === role) {
      blocks.push(inner);
    } else {
      close();
      role = next;
      blocks = [inner];
    }
  }
  close();
  return new JsonText(`[${out.join(",")}]`);
}

/**
 * Builds the body of a streaming Messages request. The messages and tools are `JsonText`,
 * serialized once per message and per tool list (`stringifyBody` sends them as they are; a
 * plain `JSON.stringify` gives the same JSON).
 */
export function anthropicRequestBody(request: ProviderRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: request.maxTokens,
    system: request.system,
    messages: anthropicMessagesJson(request.messages),
    stream: true,
  };
  if (request.tools.length > 0) {
    body.tools = new JsonText(toolsJson.text(request.tools, (tools) =>
      tools.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: t.parameters,
      }))));
  }
  return body;
}

function stopReason(reason: unknown): StopReason {
  if (reason === "end_turn" || reason === "stop_sequence") return "end_turn";
  if (reason === "tool_use" || reason === "max_tokens") return reason;
  return "other";
}

/** Decodes one Messages API response; tool_use blocks complete at their `content_block_stop`. */
class AnthropicDecoder implements StreamDecoder {
  readonly #context: DecodeContext;
  readonly #usage: Usage = { inputTokens: 0, outputTokens: 0 };
  #reason: StopReason = "other";

  constructor(context: DecodeContext) {
    this.#context = context;
  }

  *decode(sse: SseEvent): Generator<ProviderEvent> {
    if (sse.event === "ping") return;
    const { toolCalls, malformed } = this.#context;
    const data = this.#context.json(sse);
    switch (sse.event) {
      case "message_start": {
        const u = (data.message as { usage?: Record<string, number> } | undefined)?.usage;
        this.#usage.inputTokens = u?.input_tokens ?? 0;
        this.#usage.outputTokens = u?.output_tokens ?? 0;
        break;
      }
      case "content_block_start": {
        const block = data.content_block as Record<string, unknown> | undefined;
        if (block?.type === "tool_use") {
          if (typeof block.id !== "string" || typeof block.name !== "string") {
            throw malformed("tool_use block without id or name");
          }
          toolCalls.start(Number(data.index), block.id, block.name);
        } else if (block?.type === "text" && typeof block.text === "string" && block.text) {
          yield { type: "text", text: block.text };
        }
        break;
      }
      case "content_block_delta": {
        const delta = data.delta as Record<string, unknown> | undefined;
        if (delta?.type === "text_delta" && typeof delta.text === "string") {
          yield { type: "text", text: delta.text };
        } else if (delta?.type === "input_json_delta") {
          const call = toolCalls.get(Number(data.index));
          if (!call) throw malformed(`input_json_delta for unknown block ${data.index}`);
          toolCalls.appendArguments(call, String(delta.partial_json ?? ""));
        }
        break;
      }
      case "content_block_stop": {
        const call = toolCalls.take(Number(data.index));
        if (call) yield { type: "tool_call", call };
        break;
      }
      case "message_delta": {
        const delta = data.delta as Record<string, unknown> | undefined;
        if (delta?.stop_reason !== undefined) this.#reason = stopReason(delta.stop_reason);
        const u = data.usage as Record<string, number> | undefined;
        if (typeof u?.output_tokens === "number") this.#usage.outputTokens = u.output_tokens;
        if (typeof u?.input_tokens === "number") this.#usage.inputTokens = u.input_tokens;
        break;
      }
      case "message_stop":
        yield { type: "stop", reason: this.#reason, usage: this.#usage };
        break;
      case "error": {
        const error = data.error as Record<string, unknown> | undefined;
        throw this.#context.reported(
          `${error?.type ?? "error"}: ${error?.message ?? sse.data}`,
        );
      }
      default:
        // New event types are ignored, as the API's versioning policy asks.
        break;
    }
  }

  end(): Iterable<ProviderEvent> {
    throw this.#context.malformed("the stream ended before message_stop");
  }
}

/** The Messages API as a `WireFormat`. */
export const ANTHROPIC_WIRE: WireFormat = {
  path: "/v1/messages",
  headers: (apiKey) => ({
    "anthropic-version": ANTHROPIC_VERSION,
    ...(apiKey === null ? {} : { "x-api-key": apiKey }),
  }),
  body: anthropicRequestBody,
  decoder: (context) => new AnthropicDecoder(context),
};

/** A provider speaking the Anthropic Messages API. */
export class AnthropicProvider extends SseProvider {
  /** Reaches the endpoint `settings` describe. */
  constructor(settings: AnthropicSettings) {
    super(settings, ANTHROPIC_WIRE);
  }
}
