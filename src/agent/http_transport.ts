/**
 * One HTTP request to a provider over `node:http`/`node:https`, bounded by three timeouts:
 * connecting (DNS, TCP and TLS), waiting for the response headers, and waiting for each next
 * chunk of the body. `fetch` cannot tell connecting from waiting, so a black-holed host and a
 * server that accepted and went silent looked the same; here Coop dials the connection itself.
 * Connections are kept for the next request only briefly (`IDLE_CONNECTION_MS`).
 * @module
 */
import { Buffer } from "node:buffer";
import http from "node:http";
import https from "node:https";
import net from "node:net";
import tls from "node:tls";
import { errorMessage } from "../errors/coop_error.ts";
import { ProviderError, ProviderTimeoutError } from "./provider_error.ts";

/** How long a provider may take for each phase of a request, in milliseconds. */
export interface ProviderTimeouts {
  /** Until the connection (TCP, and TLS for https) is up. Timeouts here are retried. */
  connectMs: number;
  /** From connected until the response headers arrive. Not retried (the server has the request). */
  firstByteMs: number;
  /** Between two chunks of the response body. Not retried (the stream has started). */
  idleMs: number;
}

/** 10 s to connect, 120 s for the headers (a local model may be loading), 120 s between chunks. */
export const DEFAULT_PROVIDER_TIMEOUTS: Readonly<ProviderTimeouts> = {
  connectMs: 10_000,
  firstByteMs: 120_000,
  idleMs: 120_000,
};

/** Where to connect: the URL's host and port, and whether TLS is wanted. */
export interface DialTarget {
  /** Host name or IP address (IPv6 without brackets). */
  host: string;
  /** TCP port. */
  port: number;
  /** True for https: the socket must be a `tls.connect` one. */
  tls: boolean;
}

/**
 * Opens the socket a request is sent on; for https it must return a `tls.connect` socket (the
 * connection counts as up at its `secureConnect`). Tests inject one to reach a black hole.
 */
export type Dialer = (target: DialTarget) => net.Socket;

/** Connects with `node:net`, or `node:tls` (SNI from the host name) for https. */
export const defaultDialer: Dialer = ({ host, port, tls: secure }): net.Socket =>
  secure
    ? tls.connect({
      host,
      port,
      ...(net.isIP(host) ? {} : { servername: host }),
      ALPNProtocols: ["http/1.1"],
    })
    : net.connect({ host, port });

/**
 * How long a finished connection waits for the next request before Coop closes it: long enough
 * for the model calls of a turn between quick tools, shorter than the 5 s after which common
 * servers (uvicorn, llama.cpp, Node) close idle connections themselves, and far shorter than
 * the minutes after which a NAT forgets one — so a pooled connection is never silently dead.
 */
export const IDLE_CONNECTION_MS = 4000;

/** How long a body abandoned before its end (the last event read) may take to finish. */
const DRAIN_MS = 1000;

type Agents = { http: http.Agent; https: https.Agent };
const agentsByDialer = new WeakMap<Dialer, Agents>();

/** The keep-alive agents that open their connections with `dial`, one pair per dialer. */
function agentsFor(dial: Dialer): Agents {
  let agents = agentsByDialer.get(dial);
  if (!agents) {
    const options = { keepAlive: true, timeout: IDLE_CONNECTION_MS };
    const target = (o: { host?: string | null; port?: number | string | null }, tls: boolean) => ({
      host: String(o.host ?? "localhost").replace(/^\[(.*)\]$/, "$1"),
      port: Number(o.port),
      tls,
    });
    agents = {
      http: new (class extends http.Agent {
        override createConnection(o: http.ClientRequestArgs) {
          return dial(target(o, false));
        }
      })(options),
      https: new (class extends https.Agent {
        override createConnection(o: http.ClientRequestArgs) {
          return dial(target(o, true));
        }
      })(options),
    };
    agentsByDialer.set(dial, agents);
  }
  return agents;
}

/** One POST as the transport sends it. */
export interface TransportRequest {
  /** The configured provider name, for timeout errors. */
  provider: string;
  /** The full URL to POST to. */
  url: string;
  /** Request headers (`content-length` is added). */
  headers: Record<string, string>;
  /** The body, already serialized. */
  body: string;
  /** The limits for each phase. */
  timeouts: Readonly<ProviderTimeouts>;
  /** Cancels the request at any phase, with the signal's reason. */
  signal?: AbortSignal;
  /** Default: `defaultDialer`. */
  dial?: Dialer;
}

/**
 * Sends one POST and resolves with the response once its headers arrive;
 * the body is a stream that errors with `ProviderTimeoutError` (`idle`) when it stalls.
 * Rejects with `ProviderTimeoutError` (`connect`, `first_byte`), the signal's reason when
 * aborted, or the socket's error (refused, reset, DNS).
 */
export function sendRequest(request: TransportRequest): Promise<Response> {
  const { provider, url, timeouts, signal } = request;
  const secure = new URL(url).protocol === "https:";
  const dial = request.dial ?? defaultDialer;
  return new Promise<Response>((resolve, reject) => {
    signal?.throwIfAborted();
    const agents = agentsFor(dial);
    const client = (secure ? https : http).request(url, {
      method: "POST",
      headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
      agent: secure ? agents.https : agents.http,
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    let settled = false;
    const fail = (error: unknown) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      // Deno's node:http sends a request again on a new connection when a kept one closes
      // before the response, even when the request itself was destroyed: a timed-out or
      // cancelled request would be replayed. Not marking it reused turns that off.
      client.reusedSocket = false;
      client.destroy();
      if (settled) return;
      settled = true;
      reject(error);
    };
    const onAbort = () => fail(signal!.reason);
    const waitFor = (phase: "connect" | "first_byte", timeoutMs: number) => {
      clearTimeout(timer);
      timer = setTimeout(
        () => fail(new ProviderTimeoutError(provider, { phase, timeoutMs, url })),
        timeoutMs,
      );
    };
    const connected = () => waitFor("first_byte", timeouts.firstByteMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    waitFor("connect", timeouts.connectMs);
    client.once("socket", (socket) => {
      // A kept connection is already up: only the wait for the headers is left.
      if (!socket.connecting) return connected();
      socket.once(secure ? "secureConnect" : "connect", connected);
    });
    // `on`, not `once`: a second error event without a listener would be thrown.
    client.on("error", fail);
    client.once("response", (response) => {
      if (settled) return void response.destroy();
      let answer: Response;
      try {
        answer = webResponse(response, {
          idleMs: timeouts.idleMs,
          signal,
          stalled: () =>
            new ProviderTimeoutError(provider, { phase: "idle", timeoutMs: timeouts.idleMs, url }),
          broken: (cause) =>
            new ProviderError(
              "provider.stream",
              provider,
              `the connection to ${url} broke mid-stream: ${errorMessage(cause)}`,
              { cause },
            ),
          close: () => client.destroy(),
        });
      } catch (error) {
        // e.g. a status the web Response cannot carry (101, or above 599).
        return fail(error);
      }
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      settled = true;
      resolve(answer);
    });
    client.end(request.body);
  });
}

interface BodyOptions {
  idleMs: number;
  signal?: AbortSignal;
  /** The error a stall ends the body with. */
  stalled: () => Error;
  /** The error a failing connection (reset, closed mid-chunk) ends the body with. */
  broken: (cause: unknown) => Error;
  /** Closes the connection. */
  close: () => void;
}

/** The node response as a web `Response` whose body is `bodyStream`. */
function webResponse(response: http.IncomingMessage, options: BodyOptions): Response {
  const headers = new Headers();
  for (let i = 0; i + 1 < response.rawHeaders.length; i += 2) {
    headers.append(response.rawHeaders[i], response.rawHeaders[i + 1]);
  }
  return new Response(bodyStream(response, options), { status: response.statusCode, headers });
}

/**
 * The response body as a web stream whose every read waits at most `idleMs`; a stall, a broken
 * connection or the signal aborting errors the stream and closes the connection. Cancelled
 * before its end (a provider stops reading at its last event), the rest is read and dropped
 * for up to `DRAIN_MS`, so the connection can carry the next request.
 */
function bodyStream(
  response: http.IncomingMessage,
  options: BodyOptions,
): ReadableStream<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let ended = false;
  let draining = false;
  let failure: unknown = null;
  let wake = () => {};
  response.on("data", (chunk: Uint8Array) => {
    if (draining) return;
    chunks.push(chunk);
    response.pause();
    wake();
  });
  response.once("end", () => {
    ended = true;
    wake();
  });
  // `on`: a second error event without a listener would be thrown.
  response.on("error", (error) => {
    failure ??= error;
    wake();
  });
  response.once("close", () => {
    if (!ended) failure ??= new Error("the connection closed before the response ended");
    wake();
  });
  const nextEvent = () =>
    new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => settle(options.stalled()), options.idleMs);
      const onAbort = () => settle(options.signal!.reason);
      const settle = (error?: unknown) => {
        clearTimeout(timer);
        options.signal?.removeEventListener("abort", onAbort);
        wake = () => {};
        if (error === undefined) resolve();
        else reject(error);
      };
      wake = () => settle();
      if (options.signal?.aborted) return onAbort();
      options.signal?.addEventListener("abort", onAbort, { once: true });
    });
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        while (chunks.length === 0 && !ended && failure === null) await nextEvent();
        if (chunks.length > 0) {
          controller.enqueue(chunks.shift()!);
          response.resume();
        } else if (ended) {
          controller.close();
        } else {
          throw options.signal?.aborted ? options.signal.reason : options.broken(failure);
        }
      } catch (error) {
        options.close();
        controller.error(error);
      }
    },
    cancel() {
      // Read to its end, the connection has gone back to the pool already.
      if (ended) return;
      if (options.signal?.aborted || failure !== null) return options.close();
      draining = true;
      chunks.length = 0;
      // Resolved once the connection is free again (the reader's `cancel()` waits for it, so
      // the next model call of the turn finds it in the pool), or closed after `DRAIN_MS`.
      return new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          options.close();
          resolve();
        }, DRAIN_MS);
        response.once("close", () => {
          clearTimeout(timer);
          // The agent takes the connection back on a later tick than the response's end.
          setTimeout(resolve, 0);
        });
        response.resume();
      });
    },
  });
}
