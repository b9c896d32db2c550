/**
 * Tool calls as they stream in: the id and name first, the JSON arguments in pieces, parsed
 * once the call is complete.
 * @module
 */
import type { ToolCallRequest } from "./provider.ts";

/** One tool call being assembled. */
export interface PartialToolCall {
  /** The provider's id (may still be empty while streaming). */
  id: string;
  /** The tool name (may still be empty, or partial, while streaming). */
  name: string;
  /** The argument text so far. */
  json: string;
}

/** Tool calls keyed by the stream's index, completed in index order. */
export class ToolCallAccumulator {
  readonly #calls = new Map<number, PartialToolCall>();
  readonly #invalid: (call: PartialToolCall, cause: unknown) => Error;

  /** `invalid` makes the error thrown when a call's arguments are not JSON. */
  constructor(invalid: (call: PartialToolCall, cause: unknown) => Error) {
    this.#invalid = invalid;
  }

  /** Starts a fresh call at `index` (replacing any there). */
  start(index: number, id: string, name: string): PartialToolCall {
    const call = { id, name, json: "" };
    this.#calls.set(index, call);
    return call;
  }

  /** The call at `index`, started empty when it is new. */
  at(index: number): PartialToolCall {
    let call = this.#calls.get(index);
    if (!call) this.#calls.set(index, call = { id: "", name: "", json: "" });
    return call;
  }

  /** The call at `index`, if one was started. */
  get(index: number): PartialToolCall | undefined {
    return this.#calls.get(index);
  }

  /** One past the highest index started (0 when none). */
  get nextIndex(): number {
    return this.#calls.size === 0 ? 0 : Math.max(...this.#calls.keys()) + 1;
  }

  /** Adds a piece of argument text. */
  appendArguments(call: PartialToolCall, text: string): void {
    call.json += text;
  }

  /** Removes the call at `index` and completes it. */
  take(index: number): ToolCallRequest | undefined {
    const call = this.#calls.get(index);
    if (!call) return undefined;
    this.#calls.delete(index);
    return this.#complete(call);
  }

  /** The partial calls still open, in index order, with their indexes. */
  pending(): Array<[number, PartialToolCall]> {
    return [...this.#calls.entries()].sort(([a], [b]) => a - b);
  }

  /** Removes and completes every call, in index order. */
  takeAll(): ToolCallRequest[] {
    const calls = this.pending().map(([, call]) => this.#complete(call));
    this.#calls.clear();
    return calls;
  }

  #complete(call: PartialToolCall): ToolCallRequest {
    const { id, name } = call;
    if (call.json.trim() === "") return { id, name, arguments: {} };
    try {
      return { id, name, arguments: JSON.parse(call.json) };
    } catch (error) {
      throw this.#invalid(call, error);
    }
  }
}
