/**
 * The HTTP channel: `POST /v1/messages` with a bearer token speaks as `http:<id>`;
 * `GET /healthz` answers without authentication; `GET /status` (any valid token) the gateway's
 * counters, such as the leaks it replaced. Web-standard Request/Response, so the
 * handler is tested without a network and served by `serveHttp` (http_server.ts).
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { z } from "zod";
import { isSessionId } from "../state/session_store.ts";
import { TurnRefusedError } from "../errors/turn_refused.ts";
import { matchesSecretDigest, secretDigest } from "../sandbox/secret_compare.ts";
import { type HttpServer, type HttpServerLimits, serveHttp } from "./http_server.ts";
import { httpOutcomeBody } from "./http_outcome.ts";
import type { TurnHandler } from "../gateway/turn_handler.ts";

const log = getLogger(["coop", "channel", "http"]);

/** One accepted token and who it speaks as. */
export interface HttpToken {
  /** The sender id: the request speaks as `http:<id>`. */
  id: string;
  /** The secret itself (read from the environment by the caller). */
  token: string;
}

/** What the channel needs. */
export interface HttpChannelOptions {
  tokens: readonly HttpToken[];
  /** Larger request bodies get 413. */
  maxBodyBytes: number;
  handle: TurnHandler;
  /** What `GET /status` answers (e.g. `Gateway.status`); without it, 404. */
  status?: () => Record<string, unknown>;
}

const messageBody = z.strictObject({
  text: z.string().min(1, "must be a non-empty string"),
  session: z.string().refine(isSessionId, "must be 1-64 of A-Z a-z 0-9 _ -").optional(),
});

function json(status: number, body: unknown, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

function problem(status: number, code: string, message: string): Response {
  const extra: Record<string, string> = status === 401 ? { "www-authenticate": "Bearer" } : {};
  return json(status, { error: { code, message } }, extra);
}

/** Each configured token's digest, made once per token (the config's objects live until a reload). */
const tokenDigests = new WeakMap<HttpToken, { token: string; digest: Uint8Array }>();

function digestOf(token: HttpToken): Uint8Array {
  let made = tokenDigests.get(token);
  if (made?.token !== token.token) {
    made = { token: token.token, digest: secretDigest(token.token) };
    tokenDigests.set(token, made);
  }
  return made.digest;
}

function caller(request: Request, tokens: readonly HttpToken[]): string | undefined {
  const match = /^Bearer (.+)$/.exec(request.headers.get("authorization") ?? "");
  if (!match) return undefined;
  const presented = secretDigest(match[1]);
  let found: string | undefined;
  // Every token is compared, found or not: the time says nothing about which one matched.
  for (const t of tokens) {
    if (t.token && matchesSecretDigest(digestOf(t), presented)) found ??= t.id;
  }
  return found;
}

/** Reads at most `limit` bytes of the body; undefined when it is larger. */
async function readBody(request: Request, limit: number): Promise<Uint8Array | undefined> {
  const declared = Number(request.headers.get("content-length") ?? "0");
  if (declared > limit) return undefined;
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of request.body ?? []) {
    size += chunk.length;
    if (size > limit) return undefined;
    chunks.push(chunk);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) body.set(c, (offset += c.length) - c.length);
  return body;
}

function turnFailure(error: unknown): Response {
  const code = (error as { code?: unknown }).code;
  if (error instanceof TurnRefusedError) {
    // Declined before any model call (the caller's own turn cap, ATTACKS R14; a budget): safe
    // and useful to name. The code loses its `gateway.` prefix like every code of this API.
    return json(error.httpStatus, {
      error: {
        code: error.code.replace(/^[a-z]+\./, ""),
        message: error.message,
        ...error.details,
      },
    });
  }
  if (code === "gateway.shutdown") {
    return problem(503, "shutting_down", "the gateway is shutting down; try again later");
  }
  if (typeof code === "string" && code.startsWith("provider.")) {
    return problem(502, "provider_failed", "the model provider failed; the gateway logged why");
  }
  return problem(500, "turn_failed", "the turn failed; the gateway logged why");
}

/** Builds the request handler. */
export function createHttpHandler(
  options: HttpChannelOptions,
): (request: Request) => Promise<Response> {
  return async (request) => {
    const started = performance.now();
    const path = new URL(request.url).pathname;
    let response: Response;
    let sender: string | undefined;
    try {
      if (path === "/healthz") {
        response = request.method === "GET"
          ? json(200, { ok: true })
          : problem(405, "method_not_allowed", "use GET");
      } else if (path === "/status" && options.status) {
        response = request.method !== "GET"
          ? problem(405, "method_not_allowed", "use GET")
          : (sender = caller(request, options.tokens)) === undefined
          ? problem(401, "unauthorized", "a valid bearer token is required")
          : json(200, { ok: true, ...options.status() });
      } else if (path !== "/v1/messages") {
        response = problem(404, "not_found", `no route ${path}`);
      } else if (request.method !== "POST") {
        response = problem(405, "method_not_allowed", "use POST");
      } else if ((sender = caller(request, options.tokens)) === undefined) {
        response = problem(401, "unauthorized", "a valid bearer token is required");
      } else {
        response = await message(request, sender, options);
      }
    } catch (error) {
      // A failed turn is the gateway's problem, not the caller's: no stack and no detail (a
      // provider's error text is the owner's business) leaves the process.
      log.error("channel.http.turn_failed {error}", { error: String(error), sender });
      response = turnFailure(error);
    }
    log.info("channel.http.request {method} {path} {status}", {
      method: request.method,
      path,
      status: response.status,
      sender,
      durationMs: Math.round(performance.now() - started),
    });
    return response;
  };
}

async function message(
  request: Request,
  sender: string,
  options: HttpChannelOptions,
): Promise<Response> {
  const body = await readBody(request, options.maxBodyBytes);
  if (body === undefined) {
    return problem(413, "body_too_large", `the body must be at most ${options.maxBodyBytes} bytes`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(body));
  } catch {
    return problem(400, "invalid_json", "the body must be a JSON object");
  }
  const result = messageBody.safeParse(parsed);
  if (!result.success) {
    const issue = result.error.issues[0];
    return problem(400, "invalid_request", `${issue.path.join(".") || "body"}: ${issue.message}`);
  }
  const outcome = await options.handle({
    channel: "http",
    sender,
    text: result.data.text,
    session: result.data.session,
    signal: request.signal,
  });
  return json(200, httpOutcomeBody(outcome));
}

/** Serves the channel on `listen` (`host:port`) until `signal` aborts; throws what listening throws. */
export function serveHttpChannel(
  listen: string,
  options: HttpChannelOptions & { limits: HttpServerLimits },
  signal?: AbortSignal,
): HttpServer {
  const at = listen.lastIndexOf(":");
  return serveHttp({
    hostname: listen.slice(0, at).replace(/^\[(.*)\]$/, "$1"),
    port: Number(listen.slice(at + 1)),
    limits: options.limits,
    handler: createHttpHandler(options),
    signal,
  });
}
