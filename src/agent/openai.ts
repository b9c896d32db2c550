/**
 * The OpenAI-compatible Chat Completions API (`POST /chat/completions`, `stream: true`):
 * OpenAI, OpenRouter, Ollama, llama.cpp, vLLM. Tool-call deltas are assembled by index.
 * Sending, retries, timeouts and tool-call assembly are shared (`sse_provider.ts`).
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

/** The body field for the token cap: OpenAI wants `max_completion_tokens`, others `max_tokens`. */
export type MaxTokensField = "max_tokens" | "max_completion_tokens";

/**
 * How to reach one OpenAI-compatible endpoint: `baseUrl` is what `/chat/completions` is appended
 * to (e.g. `https://api.openai.com/v1`); `apiKey` is sent as `Authorization: Bearer …` (null
 * sends none: local servers).
 */
export interface OpenAiSettings extends ProviderSettings {
  /**
   * The body field for the token cap: OpenAI itself wants `max_completion_tokens`; most
   * compatible servers only know `max_tokens`. Default `max_tokens`.
   */
  maxTokensField?: MaxTokensField;
}

type WireMessage = Record<string, unknown>;

/** Maps neutral messages (after the system prompt) to Chat Completions messages. */
export function toOpenAiMessages(system: string, messages: readonly ChatMessage[]): WireMessage[] {
  const out: WireMessage[] = system ? [{ role: "system", content: system }] : [];
  for (const message of messages) {
    if (message.role === "user") {
      out.push({ role: "user", content: message.content });
    } else if (message.role === "assistant") {
      const wire: WireMessage = { role: "assistant", content: message.text || null };
      if (message.toolCalls.length > 0) {
        wire.tool_calls = message.toolCalls.map((call) => ({
          id: call.id,
          type: "function",
          function: { name: call.name, arguments: JSON.stringify(call.arguments ?? {}) },
        }));
      }
      if (wire.content !== null || wire.tool_calls) out.push(wire);
    } else {
      for (const result of message.results) {
        out.push({ role: "tool", tool_call_id: result.toolCallId, content: result.content });
      }
    }
  }
  return out;
}

/**
 * Builds the body of a streaming Chat Completions request; its tools are `JsonText`, serialized
 * once per tool list (`stringifyBody` sends them as they are).
 */
export function openAiRequestBody(
  request: ProviderRequest,
  maxTokensField: MaxTokensField = "max_tokens",
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    messages: toOpenAiMessages(request.system, request.messages),
    [maxTokensField]: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) {
    body.tools = new JsonText(toolsJson.text(request.tools, (tools) =>
      tools.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.parameters },
      }))));
  }
  return body;
}

/** The tool definitions as JSON, once per tool list (the agent loop's, one per turn). */
const toolsJson = new JsonCache<readonly ToolSpec[]>();

function stopReason(reason: unknown): StopReason {
  if (reason === "stop") return "end_turn";
  if (reason === "tool_calls" || reason === "function_call") return "tool_use";
  if (reason === "length") return "max_tokens";
  return "other";
}

/** Decodes one Chat Completions stream; tool calls complete at the `finish_reason`. */
class OpenAiDecoder implements StreamDecoder {
  readonly #context: DecodeContext;
  #usage: Usage | null = null;
  #reason: StopReason | null = null;

  constructor(context: DecodeContext) {
    this.#context = context;
  }

  *decode(sse: SseEvent): Generator<ProviderEvent> {
    const { toolCalls, malformed } = this.#context;
    if (sse.data.trim() === "[DONE]") {
      if (this.#reason === null) throw malformed("[DONE] before any finish_reason");
      yield { type: "stop", reason: this.#reason, usage: this.#usage };
      return;
    }
    const chunk = this.#context.json(sse);
    if (chunk.error !== undefined) {
      const error = chunk.error as Record<string, unknown> | string;
      throw this.#context.reported(
        typeof error === "string" ? error : String(error?.message ?? sse.data),
      );
    }
    const u = chunk.usage as Record<string, number> | null | undefined;
    if (u && typeof u === "object") {
      this.#usage = { inputTokens: u.prompt_tokens ?? 0, outputTokens: u.completion_tokens ?? 0 };
    }
    const choices = chunk.choices;
    if (!Array.isArray(choices)) {
      if (u) return;
      throw malformed("a chunk without choices");
    }
    const choice = choices[0] as Record<string, unknown> | undefined;
    if (!choice) return;
    const delta = (choice.delta ?? {}) as Record<string, unknown>;
    if (typeof delta.content === "string" && delta.content !== "") {
      yield { type: "text", text: delta.content };
    }
    if (Array.isArray(delta.tool_calls)) {
      for (const raw of delta.tool_calls as Array<Record<string, unknown>>) {
        const fn = (raw.function ?? {}) as Record<string, unknown>;
        // Some servers omit `index` and send each call whole: a new id means a new call.
        let index = typeof raw.index === "number" ? raw.index : toolCalls.nextIndex - 1;
        if (
          typeof raw.index !== "number" && (index < 0 || (raw.id && toolCalls.get(index)?.id))
        ) {
          index = toolCalls.nextIndex;
        }
        const call = toolCalls.at(index);
        if (typeof raw.id === "string" && raw.id) call.id = raw.id;
        if (typeof fn.name === "string") call.name += fn.name;
        if (typeof fn.arguments === "string") toolCalls.appendArguments(call, fn.arguments);
        else if (fn.arguments && typeof fn.arguments === "object") {
          toolCalls.appendArguments(call, JSON.stringify(fn.arguments));
        }
      }
    }
    if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
      this.#reason = stopReason(choice.finish_reason);
      for (const [i, call] of toolCalls.pending()) {
        if (!call.name) throw malformed(`tool call ${i} has no function name`);
        if (!call.id) call.id = `call_${i}`;
      }
      for (const call of toolCalls.takeAll()) yield { type: "tool_call", call };
    }
  }

  *end(): Generator<ProviderEvent> {
    // Some servers close the stream without `[DONE]`; a finish_reason is complete enough.
    if (this.#reason === null) {
      throw this.#context.malformed("the stream ended before a finish_reason");
    }
    yield { type: "stop", reason: this.#reason, usage: this.#usage };
  }
}

/** Chat Completions as a `WireFormat`, sending the token cap as `maxTokensField`. */
export function openAiWire(maxTokensField: MaxTokensField = "max_tokens"): WireFormat {
  return {
    path: "/chat/completions",
    headers: (apiKey): Record<string, string> =>
      apiKey === null ? {} : { authorization: `Bearer ${apiKey}` },
    body: (request) => openAiRequestBody(request, maxTokensField),
    decoder: (context) => new OpenAiDecoder(context),
  };
}

/** A provider speaking the OpenAI-compatible Chat Completions API. */
export class OpenAiProvider extends SseProvider {
  /** Reaches the endpoint `settings` describe. */
  constructor(settings: OpenAiSettings) {
    super(settings, openAiWire(settings.maxTokensField));
  }
}
