/**
 * The OpenAI-compatible Chat Completions API (`POST /chat/completions`, `stream: true`):
 * OpenAI, OpenRouter, Ollama, llama.cpp, vLLM. Tool-call deltas are assembled by index.
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

/** How to reach one OpenAI-compatible endpoint. */
export interface OpenAiSettings {
  /** The configured provider name. */
  name: string;
  /** The URL `/chat/completions` is appended to, e.g. `https://api.openai.com/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer …`; null sends no header (local servers). */
  apiKey: string | null;
  /**
   * The body field for the token cap: OpenAI itself wants `max_completion_tokens`; most
   * compatible servers only know `max_tokens`. Default `max_tokens`.
   */
  maxTokensField?: "max_tokens" | "max_completion_tokens";
  retry?: Readonly<RetryPolicy>;
  http?: HttpDependencies;
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

/** Builds the JSON body of a streaming Chat Completions request. */
export function openAiRequestBody(
  request: ProviderRequest,
  maxTokensField: "max_tokens" | "max_completion_tokens" = "max_tokens",
): Record<string, unknown> {
  const body: Record<string, unknown> = {
    model: request.model,
    messages: toOpenAiMessages(request.system, request.messages),
    [maxTokensField]: request.maxTokens,
    stream: true,
    stream_options: { include_usage: true },
  };
  if (request.tools.length > 0) {
    body.tools = request.tools.map((t) => ({
      type: "function",
      function: { name: t.name, description: t.description, parameters: t.parameters },
    }));
  }
  return body;
}

function stopReason(reason: unknown): StopReason {
  if (reason === "stop") return "end_turn";
  if (reason === "tool_calls" || reason === "function_call") return "tool_use";
  if (reason === "length") return "max_tokens";
  return "other";
}

interface PartialCall {
  id: string;
  name: string;
  args: string;
}

/** A provider speaking the OpenAI-compatible Chat Completions API. */
export class OpenAiProvider implements Provider {
  readonly name: string;
  readonly #settings: OpenAiSettings;

  constructor(settings: OpenAiSettings) {
    this.name = settings.name;
    this.#settings = settings;
  }

  /** Streams one response as `ProviderEvent`s. */
  async *stream(request: ProviderRequest, signal?: AbortSignal): AsyncGenerator<ProviderEvent> {
    const headers: Record<string, string> = {};
    if (this.#settings.apiKey !== null) {
      headers["authorization"] = `Bearer ${this.#settings.apiKey}`;
    }
    const body = openAiRequestBody(request, this.#settings.maxTokensField);
    const response = await postForStream(
      this.#settings,
      "/chat/completions",
      headers,
      body,
      signal,
    );
    yield* this.#events(response, signal);
  }

  async *#events(response: Response, signal?: AbortSignal): AsyncGenerator<ProviderEvent> {
    const malformed = (what: string, cause?: unknown) =>
      new ProviderError("provider.malformed", this.name, `malformed stream: ${what}`, { cause });
    if (!response.body) throw malformed("the response has no body");
    const calls: PartialCall[] = [];
    let usage: Usage | null = null;
    let reason: StopReason | null = null;
    const finish = function* (): Generator<ProviderEvent> {
      for (const call of calls) {
        if (!call) continue;
        let args: unknown;
        try {
          args = call.args.trim() === "" ? {} : JSON.parse(call.args);
        } catch (error) {
          throw malformed(`arguments of tool call "${call.name}" are not JSON`, error);
        }
        yield { type: "tool_call", call: { id: call.id, name: call.name, arguments: args } };
      }
      calls.length = 0;
    };
    for await (const sse of parseSse(response.body)) {
      signal?.throwIfAborted();
      if (sse.data.trim() === "[DONE]") {
        if (reason === null) throw malformed("[DONE] before any finish_reason");
        yield { type: "stop", reason, usage };
        return;
      }
      let chunk: Record<string, unknown>;
      try {
        chunk = JSON.parse(sse.data);
      } catch (error) {
        throw malformed("chunk data is not JSON", error);
      }
      if (chunk.error !== undefined) {
        const error = chunk.error as Record<string, unknown> | string;
        const message = typeof error === "string" ? error : String(error?.message ?? sse.data);
        throw new ProviderError(
          "provider.stream",
          this.name,
          `the server reported an error mid-stream: ${message}`,
        );
      }
      const u = chunk.usage as Record<string, number> | null | undefined;
      if (u && typeof u === "object") {
        usage = { inputTokens: u.prompt_tokens ?? 0, outputTokens: u.completion_tokens ?? 0 };
      }
      const choices = chunk.choices;
      if (!Array.isArray(choices)) {
        if (u) continue;
        throw malformed("a chunk without choices");
      }
      const choice = choices[0] as Record<string, unknown> | undefined;
      if (!choice) continue;
      const delta = (choice.delta ?? {}) as Record<string, unknown>;
      if (typeof delta.content === "string" && delta.content !== "") {
        yield { type: "text", text: delta.content };
      }
      if (Array.isArray(delta.tool_calls)) {
        for (const raw of delta.tool_calls as Array<Record<string, unknown>>) {
          const fn = (raw.function ?? {}) as Record<string, unknown>;
          // Some servers omit `index` and send each call whole: a new id means a new call.
          let index = typeof raw.index === "number" ? raw.index : calls.length - 1;
          if (typeof raw.index !== "number" && (index < 0 || (raw.id && calls[index]?.id))) {
            index = calls.length;
          }
          const call = calls[index] ??= { id: "", name: "", args: "" };
          if (typeof raw.id === "string" && raw.id) call.id = raw.id;
          if (typeof fn.name === "string") call.name += fn.name;
          if (typeof fn.arguments === "string") call.args += fn.arguments;
          else if (fn.arguments && typeof fn.arguments === "object") {
            call.args += JSON.stringify(fn.arguments);
          }
        }
      }
      if (choice.finish_reason !== null && choice.finish_reason !== undefined) {
        reason = stopReason(choice.finish_reason);
        calls.forEach((call, i) => {
          if (!call.name) throw malformed(`tool call ${i} has no function name`);
          if (!call.id) call.id = `call_${i}`;
        });
        yield* finish();
      }
    }
    signal?.throwIfAborted();
    // Some servers close the stream without `[DONE]`; a finish_reason is complete enough.
    if (reason === null) throw malformed("the stream ended before a finish_reason");
    yield { type: "stop", reason, usage };
  }
}
