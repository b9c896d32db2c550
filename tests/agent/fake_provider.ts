/**
 * `FakeProvider`: replays scripted event lists, one per model call, and records requests.
 * @module
 */
import type { Provider, ProviderEvent, ProviderRequest } from "../../src/agent/provider.ts";

/** A provider that answers each call with the next script entry (and repeats the last). */
export class FakeProvider implements Provider {
  readonly name = "fake";
  readonly requests: ProviderRequest[] = [];
  readonly #script: ReadonlyArray<readonly ProviderEvent[]>;

  constructor(script: ReadonlyArray<readonly ProviderEvent[]>) {
    this.#script = script;
  }

  /** Yields the next scripted events. */
  async *stream(request: ProviderRequest, signal?: AbortSignal): AsyncGenerator<ProviderEvent> {
    // Copy: the loop keeps appending to the conversation it passed in.
    this.requests.push({ ...request, messages: [...request.messages] });
    const events = this.#script[Math.min(this.requests.length, this.#script.length) - 1];
    for (const event of events) {
      signal?.throwIfAborted();
      await Promise.resolve();
      yield event;
    }
  }
}

/** A model response that calls one tool. */
export function callsTool(id: string, name: string, args: unknown): ProviderEvent[] {
  return [
    { type: "tool_call", call: { id, name, arguments: args } },
    { type: "stop", reason: "tool_use", usage: { inputTokens: 10, outputTokens: 5 } },
  ];
}

/** A model response that answers with text. */
export function says(text: string): ProviderEvent[] {
  return [
    { type: "text", text },
    { type: "stop", reason: "end_turn", usage: { inputTokens: 10, outputTokens: 5 } },
  ];
}
