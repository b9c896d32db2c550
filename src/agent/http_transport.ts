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
import { ProviderResponse } from "./provider_response.ts";

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
 * Sends one POST and resolves with the response once its headers arrive; its body is read
 * with `read()`, each read failing with `ProviderTimeoutError` (`idle`) when the body stalls.
 * Rejects with `ProviderTimeoutError` (`connect`, `first_byte`), the signal's reason when
 * aborted, or the socket's error (refused, reset, DNS).
 */
export function openRequest(request: TransportRequest): Promise<ProviderResponse> {
  const { provider, url, timeouts, signal } = request;
  const secure = /^https:/i.test(url);
  const dial = request.dial ?? defaultDialer;
  return new Promise<ProviderResponse>((resolve, reject) => {
    signal?.throwIfAborted();
    const agents = agentsFor(dial);
    const client = (secure ? https : http).request(url, {
      method: "POST",
      headers: { ...request.headers, "content-length": String(Buffer.byteLength(request.body)) },
      agent: secure ? agents.https : agents.http,
    });
    let settled = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
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
    // One timer for both phases: connecting moves the deadline, and the timer is set again
    // only when it fires early for the phase it finds, or would fire too late for the new one.
    let phase: "connect" | "first_byte" = "connect";
    let deadline = performance.now() + timeouts.connectMs;
    let firesAt = deadline;
    const check = () => {
      const left = deadline - performance.now();
      if (left > 0) return arm(left);
      const timeoutMs = phase === "connect" ? timeouts.connectMs : timeouts.firstByteMs;
      fail(new ProviderTimeoutError(provider, { phase, timeoutMs, url }));
    };
    const arm = (ms: number) => {
      clearTimeout(timer);
      firesAt = performance.now() + ms;
      timer = setTimeout(check, ms);
    };
    const connected = () => {
      phase = "first_byte";
      deadline = performance.now() + timeouts.firstByteMs;
      if (deadline < firesAt) arm(timeouts.firstByteMs);
    };
    timer = setTimeout(check, timeouts.connectMs);
    signal?.addEventListener("abort", onAbort, { once: true });
    client.once("socket", (socket) => {
      // A kept connection is already up: only the wait for the headers is left.
      if (!socket.connecting) return connected();
      socket.once(secure ? "secureConnect" : "connect", connected);
    });
    // `on`, not `once`: a second error event without a listener would be thrown.
    client.on("error", fail);
    client.once("response", (response) => {
      if (settled) return void response.destroy();
      const status = response.statusCode ?? 0;
      // What a web Response could not carry either (101, or above 599) is no answer.
      if (status < 200 || status > 599) {
        return fail(new RangeError(`the server answered with HTTP status ${status}`));
      }
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      settled = true;
      resolve(
        new ProviderResponse(response, {
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
        }),
      );
    });
    client.end(request.body);
  });
}

/**
 * `openRequest` with the response as a web `Response`, whose body stream errors as `read()`
 * does and, cancelled before its end, drains the connection for reuse.
 */
export async function sendRequest(request: TransportRequest): Promise<Response> {
  const response = await openRequest(request);
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const chunk = await response.read();
        if (chunk === null) controller.close();
        else controller.enqueue(chunk);
      } catch (error) {
        controller.error(error);
      }
    },
    cancel: () => response.cancel(),
  });
  return new Response(body, { status: response.status, headers: response.headers });
}
