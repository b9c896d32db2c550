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
 * Parses an event stream into events; a final event without its blank line is still dispatched.
 *
 * @example
 * ```ts
 * for await (const e of parseSse(response.body!)) console.log(e.event, JSON.parse(e.data));
 * ```
 */
export async function* parseSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseEvent> {
  const decoder = new TextDecoder();
  let buffer = "";
  let event = "";
  let data: string[] = [];
  let hasData = false;
  let lastId: string | undefined;
  const line = (text: string): SseEvent | null => {
    if (text === "") {
      if (!hasData) {
        event = "";
        return null;
      }
      const dispatched: SseEvent = {
        event: event || "message",
        data: data.join("\n"),
        ...(lastId === undefined ? {} : { id: lastId }),
      };
      event = "";
      data = [];
      hasData = false;
      return dispatched;
    }
    if (text.startsWith(":")) return null;
    const colon = text.indexOf(":");
    const field = colon === -1 ? text : text.slice(0, colon);
    let value = colon === -1 ? "" : text.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "id" && !value.includes("\0")) lastId = value;
    else if (field === "data") {
      data.push(value);
      hasData = true;
    }
    return null;
  };
  const reader = body.getReader();
  try {
    while (true) {
      const { done, value } = await reader.read();
      buffer += done ? decoder.decode() : decoder.decode(value, { stream: true });
      // A lone "\r" at the end may be the first half of "\r\n": wait for the next chunk.
      let match: RegExpExecArray | null;
      const eol = /\r\n|\r(?!$)|\n/g;
      let start = 0;
      while ((match = eol.exec(buffer)) !== null) {
        const dispatched = line(buffer.slice(start, match.index));
        start = match.index + match[0].length;
        if (dispatched) yield dispatched;
      }
      buffer = buffer.slice(start);
      if (done) break;
    }
    if (buffer.endsWith("\r")) buffer = buffer.slice(0, -1);
    if (buffer !== "") line(buffer);
    const last = line("");
    if (last) yield last;
  } finally {
    reader.releaseLock();
    await body.cancel().catch(() => {});
  }
}
