/**
 * A scripted LLM server on loopback: each request gets the next scripted reply (status, headers,
 * SSE chunks, or a stream that stays open), and every request is recorded for assertions.
 * @module
 */

/** A request as the server received it. */
export interface RecordedRequest {
  method: string;
  path: string;
  headers: Headers;
  /** The parsed JSON body. */
  body: Record<string, unknown>;
}

/** One scripted reply. */
export interface ScriptedReply {
  status?: number;
  headers?: Record<string, string>;
  /** Body chunks, written one at a time with a pause between them. */
  chunks?: string[];
  /** After the chunks, keep the stream open until the client goes away. */
  hang?: boolean;
  /** Read the request, then never answer: not even the status line and headers. */
  silent?: boolean;
}

/** A reply, or a function making it from the request (to echo what a tool returned). */
export type ScriptStep = ScriptedReply | ((request: RecordedRequest) => ScriptedReply);

/** A running scripted server. */
export interface ScriptedServer {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  requests: RecordedRequest[];
  /** Resolves when the client cancelled a hanging stream. */
  cancelled: Promise<void>;
}

/** Splits `text` into pieces of `size` characters, so SSE lines straddle chunk boundaries. */
export function splitEvery(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Formats Anthropic-style events (`event:` + `data:`). */
export function namedEvents(events: ReadonlyArray<[string, unknown]>): string {
  return events.map(([name, data]) => `event: ${name}\ndata: ${JSON.stringify(data)}\n\n`).join(
    "",
  );
}

/** Formats OpenAI-style events (`data:` only), ending with `data: [DONE]`. */
export function dataEvents(chunks: readonly unknown[], done = true): string {
  return chunks.map((c) => `data: ${JSON.stringify(c)}\n\n`).join("") +
    (done ? "data: [DONE]\n\n" : "");
}

/** An SSE reply made of `body` split into small chunks. */
export function sseReply(body: string, chunkSize = 23): ScriptedReply {
  return {
    headers: { "content-type": "text/event-stream" },
    chunks: splitEvery(body, chunkSize),
  };
}

/** A JSON error reply. */
export function errorReply(
  status: number,
  message: string,
  headers: Record<string, string> = {},
): ScriptedReply {
  return {
    status,
    headers: { "content-type": "application/json", ...headers },
    chunks: [JSON.stringify({ type: "error", error: { type: "test_error", message } })],
  };
}

/** Runs `fn` with a server answering with `script` in order (a 599 when it runs out). */
export async function withScriptedServer(
  script: readonly ScriptStep[],
  fn: (server: ScriptedServer) => Promise<void>,
): Promise<void> {
  const requests: RecordedRequest[] = [];
  let markCancelled = () => {};
  const cancelled = new Promise<void>((resolve) => markCancelled = resolve);
  const pending = new Set<() => void>();
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      const text = await request.text();
      requests.push({
        method: request.method,
        path: new URL(request.url).pathname,
        headers: request.headers,
        body: text ? JSON.parse(text) : {},
      });
      const step = script[requests.length - 1] ?? { status: 599, chunks: ["script exhausted"] };
      const reply = typeof step === "function" ? step(requests[requests.length - 1]) : step;
      if (reply.silent) {
        await new Promise<void>((resolve) => pending.add(resolve));
        return new Response(null, { status: 599 });
      }
      const encoder = new TextEncoder();
      const chunks = [...(reply.chunks ?? [])];
      const body = new ReadableStream<Uint8Array>({
        async pull(controller) {
          const next = chunks.shift();
          if (next !== undefined) {
            await new Promise((r) => setTimeout(r, 1));
            controller.enqueue(encoder.encode(next));
            return;
          }
          if (!reply.hang) return controller.close();
          // Stay open until the client cancels or the server shuts down.
          await new Promise<void>((resolve) => pending.add(resolve));
          controller.close();
        },
        cancel() {
          markCancelled();
          for (const release of pending) release();
        },
      });
      return new Response(body, { status: reply.status ?? 200, headers: reply.headers });
    },
  );
  try {
    await fn({ url: `http://127.0.0.1:${server.addr.port}`, requests, cancelled });
  } finally {
    for (const release of pending) release();
    await server.shutdown();
  }
}
