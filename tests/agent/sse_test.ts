import { parseSse, type SseEvent } from "../../src/agent/sse.ts";
import { assertEquals } from "../assert.ts";

async function parse(chunks: string[]): Promise<SseEvent[]> {
  const encoder = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(encoder.encode(chunk));
      controller.close();
    },
  });
  const events: SseEvent[] = [];
  for await (const event of parseSse(body)) events.push(event);
  return events;
}

Deno.test("SSE: named events, comments, multi-line data, default event name", async () => {
  const events = await parse([
    ": keep-alive\n\nevent: ping\ndata: {}\n\ndata: line one\ndata: line two\n\n",
  ]);
  assertEquals(events, [
    { event: "ping", data: "{}" },
    { event: "message", data: "line one\nline two" },
  ]);
});

Deno.test("SSE: CRLF and CR line ends, split anywhere, even between CR and LF", async () => {
  const events = await parse(["event: a\r", "\ndata: 1\r\n\r", "\nevent: b\rdata: 2\r\r"]);
  assertEquals(events, [{ event: "a", data: "1" }, { event: "b", data: "2" }]);
});

Deno.test("SSE: a multi-byte character split across chunks survives", async () => {
  const bytes = new TextEncoder().encode("data: héllo 🔒\n\n");
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const b of bytes) controller.enqueue(new Uint8Array([b]));
      controller.close();
    },
  });
  const events: SseEvent[] = [];
  for await (const event of parseSse(body)) events.push(event);
  assertEquals(events, [{ event: "message", data: "héllo 🔒" }]);
});

Deno.test("SSE: a last event without its blank line is still dispatched", async () => {
  assertEquals(await parse(["data: [DONE]"]), [{ event: "message", data: "[DONE]" }]);
});
