/**
 * One HTTP/1.1 request to a provider on a socket Coop dials itself (`node:net`, `node:tls`),
 * bounded by three timeouts: connecting (DNS, TCP and TLS), waiting for the response headers,
 * and waiting for each next chunk of the body. `fetch` cannot tell connecting from waiting, so a
 * black-holed host and a server that accepted and went silent looked the same; and `node:http`
 * costs ≈ 100 µs per request more than the few lines of HTTP/1.1 a provider needs
 * (`http1_exchange.ts`, `http1_parser.ts`). Connections are kept for the next request only
 * briefly (`IDLE_CONNECTION_MS`, `http1_pool.ts`).
 * @module
 */
import net from "node:net";
import tls from "node:tls";
import { Exchange, targetOf } from "./http1_exchange.ts";
import type { ProviderResponse } from "./provider_response.ts";

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

export { IDLE_CONNECTION_MS } from "./http1_pool.ts";

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
 * aborted, a `ProviderError` (`provider.malformed`) when the response breaks HTTP/1.1, or the
 * socket's error (refused, reset, DNS).
 */
export function openRequest(request: TransportRequest): Promise<ProviderResponse> {
  try {
    request.signal?.throwIfAborted();
    const target = targetOf(request.url);
    return new Promise((resolve, reject) => new Exchange(request, target, resolve, reject));
  } catch (error) {
    return Promise.reject(error);
  }
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
