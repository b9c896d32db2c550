/**
 * What every streaming provider shares: the request (retries and timeouts), reading the
 * server-sent events, the errors a stream can end with, and tool-call assembly. A wire format
 * (`anthropic.ts`, `openai.ts`) only maps the request and decodes its own events.
 * @module
 */
import { credentialsIn, type EndpointSettings, postForStream } from "./http_retry.ts";
import type { Provider, ProviderEvent, ProviderRequest } from "./provider.ts";
import { redactSecrets } from "../errors/secret_redaction.ts";
import { ProviderError } from "./provider_error.ts";
import { type SseEvent, SseParser } from "./sse.ts";
import { ToolCallAccumulator } from "./tool_call_accumulator.ts";

/** How to reach one endpoint: where, with which key, retries and timeouts. */
export interface ProviderSettings extends EndpointSettings {
  /** The key for the wire format's auth header; null sends none (local servers, proxies). */
  apiKey: string | null;
}

/** What a decoder has to hand for one response. */
export interface DecodeContext {
  /** Tool calls of this response, being assembled (arguments capped, parsed at the end). */
  toolCalls: ToolCallAccumulator;
  /** A `provider.malformed` error: the stream broke the wire format. */
  malformed(what: string, cause?: unknown): ProviderError;
  /** A `provider.stream` error: the server reported a failure inside the stream. */
  reported(message: string): ProviderError;
  /** The event's data parsed as a JSON object, or a `malformed` error naming the event. */
  json(event: SseEvent): Record<string, unknown>;
}

/** Turns one response's server-sent events into `ProviderEvent`s. */
export interface StreamDecoder {
  /** The events one server-sent event completes; a `stop` event ends the stream. */
  decode(event: SseEvent): Iterable<ProviderEvent>;
  /** The events still due when the body ends without a `stop`; throws when that is malformed. */
  end(): Iterable<ProviderEvent>;
}

/** One wire format: its path, auth headers, request body and event decoder. */
export interface WireFormat {
  /** Appended to `base_url`, e.g. `/v1/messages`. */
  readonly path: string;
  /** The headers that carry the key (and e.g. the API version). */
  headers(apiKey: string | null): Record<string, string>;
  /** The JSON body of a streaming request. */
  body(request: ProviderRequest): Record<string, unknown>;
  /** A fresh decoder for one response. */
  decoder(context: DecodeContext): StreamDecoder;
}

/** `secrets`: what a server's own error text must not carry into errors and logs (its key). */
function decodeContext(provider: string, secrets: readonly string[]): DecodeContext {
  const malformed = (what: string, cause?: unknown) =>
    new ProviderError("provider.malformed", provider, `malformed stream: ${what}`, { cause });
  return {
    toolCalls: new ToolCallAccumulator(),
    malformed,
    reported: (message) =>
      new ProviderError(
        "provider.stream",
        provider,
        `the server reported an error mid-stream: ${redactSecrets(message, secrets)}`,
      ),
    json(event) {
      try {
        const data = JSON.parse(event.data);
        if (data !== null && typeof data === "object" && !Array.isArray(data)) return data;
      } catch (error) {
        throw malformed(`"${event.event}" event data is not JSON`, error);
      }
      throw malformed(`"${event.event}" event data is not a JSON object`);
    },
  };
}

/**
 * A provider speaking `wire` over HTTP with server-sent events.
 *
 * @example
 * ```ts
 * const provider = new SseProvider({ name: "local", baseUrl, apiKey: null }, openAiWire());
 * for await (const event of provider.stream(request)) console.log(event);
 * ```
 */
export class SseProvider implements Provider {
  /** The configured provider name. */
  readonly name: string;
  readonly #settings: ProviderSettings;
  readonly #wire: WireFormat;

  /** A provider reaching `settings`' endpoint in the wire format `wire`. */
  constructor(settings: ProviderSettings, wire: WireFormat) {
    this.name = settings.name;
    this.#settings = settings;
    this.#wire = wire;
  }

  /**
   * Streams one response as `ProviderEvent`s, read straight from the connection; it ends at the
   * `stop` event, with the connection back in the pool (what follows the last event, normally
   * nothing but the end of the body, is drained first).
   */
  async *stream(request: ProviderRequest, signal?: AbortSignal): AsyncGenerator<ProviderEvent> {
    const wire = this.#wire;
    const headers = wire.headers(this.#settings.apiKey);
    const response = await postForStream(this.#settings, {
      path: wire.path,
      headers,
      body: wire.body(request),
    }, signal);
    try {
      const decoder = wire.decoder(decodeContext(this.name, credentialsIn(headers)));
      const parser = new SseParser();
      // The events of each chunk are decoded in one go: an await per chunk, not per event.
      for (let ended = false; !ended;) {
        const chunk = await response.read();
        ended = chunk === null;
        for (const sse of chunk === null ? parser.end() : parser.push(chunk)) {
          signal?.throwIfAborted();
          for (const event of decoder.decode(sse)) {
            yield event;
            if (event.type === "stop") return;
          }
        }
      }
      signal?.throwIfAborted();
      yield* decoder.end();
    } finally {
      await response.cancel();
    }
  }
}
