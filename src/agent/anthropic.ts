/**
 * The Anthropic Messages API (`POST /v1/messages`, `stream: true`): request mapping and the
 * SSE event stream (`message_start` … `message_stop`) turned into `ProviderEvent`s.
 * @module
 */
import { type HttpDependencies, postForStream, type RetryPolicy } from "./http_retry.ts";
import type {
  ChatMessage,
  Provider,
  ProviderEvent,
  ProviderRequest,
  StopReason,
  Usage,
} from "./provider.ts";
import { ProviderError } from "./provider_error.ts";
import { parseSse } from "./sse.ts";

/** The API version header Coop speaks. */
export const ANTHROPIC_VERSION = "2023-06-01";

/** The public endpoint, used when `base_url` is not set. */
export const ANTHROPIC_DEFAULT_BASE_URL = "https://api.anthropic.com";

/** How to reach one Anthropic-format endpoint. */
export interface AnthropicSettings {
  /** The configured provider name. */
  name: string;
  /** e.g. `https://api.anthropic.com` (without `/v1`). */
  baseUrl: string;
  /** Sent as `x-api-key`; null sends none (a local proxy that adds it). */
  apiKey: string | null;
  retry?: Readonly<RetryPolicy>;
  http?: HttpDependencies;
}

type Block = Record<string, unknown>;
type WireMessage = { role: "user" | "assistant"; content: Block[] };

/** Maps neutral messages to Anthropic's, merging neighbours with the same role. */
export function toAnthropicMessages(messages: readonly ChatMessage[]): WireMessage[] {
  const out: WireMessage[] = [];
  const push = (role: WireMessage["role"], content: Block[]) => {
    if (content.length === 0) return;
    const last = out.at(-1);
    if (last?.role === role) last.content.push(...content);
    else out.push({ role, content });
  };
  for (const message of messages) {
    if (message.role === "user") {
      push("user", [{ type: "text", text: message.content }]);
    } else if (message.role === "assistant") {
      const blocks: Block[] = message.text ? [{ type: "text", text: message.text }] : [];
      for (const call of message.toolCalls) {
        blocks.push({ type: "tool_use", id: call.id, name: call.name, input: call.arguments });
      }
      push("assistant", blocks);
    } else {
      push(
        "user",
        message.results.map((r) => ({
          type: "tool_result",
          tool_use_id: r.toolCallId,
          content: r.content,
          ...(r.isError ? { is_error: true } : {}),
        })),
      );
    }
  }
  return out;
}

/** Builds the JSON body of a streaming Messages request. */
export function anthropicRequestBody(request: ProviderRequest): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    max_tokens: request.maxTokens,
    system: request.system,
    messages: toAnthropicMessages(request.messages),
    stream: true,
  };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((t) => ({
      name: t.name,
      description: t.description,
      input_schema: t.parameters,
    }));
  }
  return body;
}

function stopReason(reason: unknown): StopReason {
  if (reason === "end_turn" || reason === "stop_sequence") return "end_turn";
  if (reason === "tool_use" || reason === "max_tokens") return reason;
  return "other";
}

/** A provider speaking the Anthropic Messages API. */
export class AnthropicProvider implements Provider {
  readonly name: string;
  readonly #settings: AnthropicSettings;

  constructor(settings: AnthropicSettings) {
    this.name = settings.name;
    this.#settings = settings;
  }

  /** Streams one response as `ProviderEvent`s. */
  async *stream(request: ProviderRequest, signal?: AbortSignal): AsyncGenerator<ProviderEvent> {
    const headers: Record<string, string> = { "anthropic-version": ANTHROPIC_VERSION };
    if (this.#settings.apiKey !== null) headers["x-api-key"] = this.#settings.apiKey;
    const body = anthropicRequestBody(request);
    const response = await postForStream(this.#settings, "/v1/messages", headers, body, signal);
    yield* this.#events(response, signal);
  }

  async *#events(response: Response, signal?: AbortSignal): AsyncGenerator<ProviderEvent> {
    const malformed = (what: string) =>
      new ProviderError("provider.malformed", this.name, `malformed stream: ${what}`);
    if (!response.body) throw malformed("the response has no body");
    const blocks = new Map<number, { id: string; name: string; json: string }>();
    const usage: Usage = { inputTokens: 0, outputTokens: 0 };
    let reason: StopReason = "other";
    for await (const sse of parseSse(response.body)) {
      signal?.throwIfAborted();
      if (sse.event === "ping") continue;
      let data: Record<string, unknown>;
      try {
        data = JSON.parse(sse.data);
      } catch (error) {
        throw new ProviderError(
          "provider.malformed",
          this.name,
          `malformed stream: "${sse.event}" event data is not JSON`,
          { cause: error },
        );
      }
      switch (sse.event) {
        case "message_start": {
          const u = (data.message as { usage?: Record<string, number> } | undefined)?.usage;
          usage.inputTokens = u?.input_tokens ?? 0;
          usage.outputTokens = u?.output_tokens ?? 0;
          break;
        }
        case "content_block_start": {
          const block = data.content_block as Record<string, unknown> | undefined;
          if (block?.type === "tool_use") {
            if (typeof block.id !== "string" || typeof block.name !== "string") {
              throw malformed("tool_use block without id or name");
            }
            blocks.set(Number(data.index), { id: block.id, name: block.name, json: "" });
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
            const block = blocks.get(Number(data.index));
            if (!block) throw malformed(`input_json_delta for unknown block ${data.index}`);
            block.json += String(delta.partial_json ?? "");
          }
          break;
        }
        case "content_block_stop": {
          const block = blocks.get(Number(data.index));
          if (!block) break;
          blocks.delete(Number(data.index));
          let args: unknown;
          try {
            args = block.json.trim() === "" ? {} : JSON.parse(block.json);
          } catch (error) {
            throw new ProviderError(
              "provider.malformed",
              this.name,
              `malformed stream: arguments of tool call "${block.name}" are not JSON`,
              { cause: error },
            );
          }
          yield { type: "tool_call", call: { id: block.id, name: block.name, arguments: args } };
          break;
        }
        case "message_delta": {
          const delta = data.delta as Record<string, unknown> | undefined;
          if (delta?.stop_reason !== undefined) reason = stopReason(delta.stop_reason);
          const u = data.usage as Record<string, number> | undefined;
          if (typeof u?.output_tokens === "number") usage.outputTokens = u.output_tokens;
          if (typeof u?.input_tokens === "number") usage.inputTokens = u.input_tokens;
          break;
        }
        case "message_stop":
          yield { type: "stop", reason, usage };
          return;
        case "error": {
          const error = data.error as Record<string, unknown> | undefined;
          throw new ProviderError(
            "provider.stream",
            this.name,
            `the server reported an error mid-stream: ${error?.type ?? "error"}: ${
              error?.message ?? sse.data
            }`,
          );
        }
        default:
          // New event types are ignored, as the API's versioning policy asks.
          break;
      }
    }
    signal?.throwIfAborted();
    throw malformed("the stream ended before message_stop");
  }
}
