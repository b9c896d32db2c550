/**
 * Between `node:http` and Web-standard Request/Response: the channel's handler stays
 * `(Request) => Promise<Response>` whichever server runs it.
 * @module
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { Readable } from "node:stream";

/** The Web Request for a parsed `node:http` request; `signal` aborts when the client leaves. */
export function toWebRequest(req: IncomingMessage, origin: string, signal: AbortSignal): Request {
  const headers = new Headers();
  for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
    headers.append(req.rawHeaders[i], req.rawHeaders[i + 1]);
  }
  const method = req.method ?? "GET";
  const hasBody = method !== "GET" && method !== "HEAD";
  return new Request(new URL(req.url ?? "/", origin), {
    method,
    headers,
    signal,
    ...(hasBody ? { body: Readable.toWeb(req) as ReadableStream<Uint8Array>, duplex: "half" } : {}),
  } as RequestInit);
}

/**
 * Writes `response` (buffered: the channel's replies are small JSON documents) with
 * `Connection: close`: one request per connection. A turn takes seconds, so reuse saves little,
 * and node:http closes a kept-alive socket anyway when its server did not `listen()` itself.
 */
export async function writeWebResponse(
  res: ServerResponse,
  response: Response,
): Promise<void> {
  let body: Uint8Array;
  try {
    body = new Uint8Array(await response.arrayBuffer());
  } catch {
    res.destroy();
    return;
  }
  if (res.destroyed) return;
  for (const [name, value] of response.headers) {
    if (name !== "set-cookie") res.setHeader(name, value);
  }
  const cookies = response.headers.getSetCookie();
  if (cookies.length) res.setHeader("set-cookie", cookies);
  res.setHeader("content-length", body.length);
  res.shouldKeepAlive = false;
  res.statusCode = response.status;
  res.end(body);
}
