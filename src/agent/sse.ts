/**
 * A server-sent events parser (the WHATWG event-stream format) over a byte stream.
 * @module
 */

/** One dispatched event: its `event:` name (`message` when absent) and joined `data:` lines. */
export interface SseEvent {
  event: string;
  data: string;
  /** The stream's last event id (`id:`) when the event was dispatched, if any was set. */
  id?: string;
}

/**
 * The event-stream format, fed chunk by chunk: `push` each piece of the body as it arrives and
 * `end` once it is over (a final event without its blank line is still dispatched).
 */
export class SseParser {
  readonly #decoder = new TextDecoder();
  #buffer = "";
  #event = "";
  #data: string[] = [];
  #hasData = false;
  #lastId: string | undefined;

  /** The events completed by `chunk`, in order. */
  push(chunk: Uint8Array): SseEvent[] {
    const events: SseEvent[] = [];
    const buffer = this.#buffer + this.#decoder.decode(chunk, { stream: true });
    // A lone "\r" at the end may be the first half of "\r\n": wait for the next chunk.
    const eol = /\r\n|\r(?!$)|\n/g;
    let start = 0;
    for (let match = eol.exec(buffer); match !== null; match = eol.exec(buffer)) {
      this.#line(buffer.slice(start, match.index), events);
      start = match.index + match[0].length;
    }
    this.#buffer = buffer.slice(start);
    return events;
  }

  /** The events still due at the end of the stream. */
  end(): SseEvent[] {
    const events: SseEvent[] = [];
    let buffer = this.#buffer + this.#decoder.decode();
    this.#buffer = "";
    if (buffer.endsWith("\r")) buffer = buffer.slice(0, -1);
    // Split what is left as `push` would have: "\r" alone is a line end here too.
    const lines = buffer === "" ? [] : buffer.split(/\r\n|\r|\n/);
    for (const text of lines) this.#line(text, events);
    this.#line("", events);
    return events;
  }

  #line(text: string, events: SseEvent[]): void {
    if (text === "") {
      if (this.#hasData) {
        events.push({
          event: this.#event || "message",
          data: this.#data.join("\n"),
          ...(this.#lastId === undefined ? {} : { id: this.#lastId }),
        });
      }
      this.#event = "";
      this.#data = [];
      this.#hasData = false;
      return;
    }
    if (text.startsWith(":")) return;
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") this.#event = value;
    else if (field === "id" && !value.includes("\0")) this.#lastId = value;
    else if (field === "data") {
      this.#data.push(value);
      this.#hasData = true;
    }
  }
}

/**
 * Parses an event stream into events; a final event without its blank line is still dispatched.
 *
 * @example
 * ```ts
 * for await (const e of parseSse(response.body!)) console.log(e.event, JSON.parse(e.data));
 * ```
 */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const parser = new SseParser();
  const reader = body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      yield* done ? parser.end() : parser.push(value);
      if (done) break;
    }
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
