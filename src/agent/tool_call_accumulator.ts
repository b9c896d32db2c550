/**
 * Tool calls as they stream in: the id and name first, the JSON arguments in pieces, parsed
 * once the call is complete. Arguments that are not JSON, or larger than the cap, become an
 * `argumentsError` the model is shown instead of failing the turn.
 * @module
 */
import { Buffer } from "node:buffer";
import type { ToolCallRequest } from "./provider.ts";

/**
 * The most bytes of JSON arguments one tool call may have (256 KiB): more is refused without
 * parsing. Generous for a file write; it bounds the memory a runaway stream can pin.
 */
export const MAX_TOOL_ARGUMENT_BYTES = 256 * 1024;

/** One tool call being assembled. */
export interface PartialToolCall {
  /** The provider's id (may still be empty while streaming). */
  id: string;
  /** The tool name (may still be empty, or partial, while streaming). */
  name: string;
  /** The argument text kept so far (emptied once over the cap). */
  json: string;
  /** Bytes of argument text received, including any beyond the cap. */
  bytes: number;
}

/**
 * Parses a complete call's arguments: `{}` when none were sent; on invalid JSON or too many
 * bytes, `{}` with an `argumentsError` saying why (the loop answers the call with it).
 */
export function completeToolCall(
  call: PartialToolCall,
  limitBytes: number = MAX_TOOL_ARGUMENT_BYTES,
): ToolCallRequest {
  const { id, name } = call;
  // Both APIs want an object as the call's arguments when the history is sent back.
  const refused = (why: string) => ({ id, name, arguments: {}, argumentsError: why });
  if (call.bytes > limitBytes) {
    return refused(
      `tool arguments too large: ${call.bytes} bytes, more than the ${limitBytes} bytes ` +
        `(${limitBytes / 1024} KiB) Coop accepts; the call was not run — split the work into ` +
        "smaller calls (e.g. write a large file in parts)",
    );
  }
  if (call.json.trim() === "") return { id, name, arguments: {} };
  try {
    return { id, name, arguments: JSON.parse(call.json) };
  } catch (error) {
    return refused(
      `invalid JSON in tool arguments: ${(error as Error).message}; the call was not run — ` +
        "send the arguments as one JSON object",
    );
  }
}

/** Tool calls keyed by the stream's index, completed in index order. */
export class ToolCallAccumulator {
  readonly #calls = new Map<number, PartialToolCall>();
  readonly #limitBytes: number;

  /** Calls whose arguments pass `limitBytes` are refused (default `MAX_TOOL_ARGUMENT_BYTES`). */
  constructor(limitBytes: number = MAX_TOOL_ARGUMENT_BYTES) {
    this.#limitBytes = limitBytes;
  }

  /** Starts a fresh call at `index` (replacing any there). */
  start(index: number, id: string, name: string): PartialToolCall {
    const call = { id, name, json: "", bytes: 0 };
    this.#calls.set(index, call);
    return call;
  }

  /** The call at `index`, started empty when it is new. */
  at(index: number): PartialToolCall {
    let call = this.#calls.get(index);
    if (!call) this.#calls.set(index, call = { id: "", name: "", json: "", bytes: 0 });
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

  /** Adds a piece of argument text; beyond the cap it is counted but no longer kept. */
  appendArguments(call: PartialToolCall, text: string): void {
    call.bytes += Buffer.byteLength(text);
    call.json = call.bytes > this.#limitBytes ? "" : call.json + text;
  }

  /** Removes the call at `index` and completes it. */
  take(index: number): ToolCallRequest | undefined {
    const call = this.#calls.get(index);
    if (!call) return undefined;
    this.#calls.delete(index);
    return completeToolCall(call, this.#limitBytes);
  }

  /** The partial calls still open, in index order, with their indexes. */
  pending(): Array<[number, PartialToolCall]> {
    return [...this.#calls.entries()].sort(([a], [b]) => a - b);
  }

  /** Removes and completes every call, in index order. */
  takeAll(): ToolCallRequest[] {
    const calls = this.pending().map(([, call]) => completeToolCall(call, this.#limitBytes));
    this.#calls.clear();
    return calls;
  }
}
