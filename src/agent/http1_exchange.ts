/**
 * One HTTP/1.1 request and its response on a dialled or kept connection: the request in one
 * write, the response through `Http1Parser`, the connect and first-byte phases under one timer,
 * and the connection back to the pool only when its response was read to a clean end.
 * @module
 */
import { Buffer } from "node:buffer";
import type net from "node:net";
import { errorMessage } from "../errors/coop_error.ts";
import { Http1FramingError, Http1Parser, type ResponseHead } from "./http1_parser.ts";
import { poolKey, release, takeIdle } from "./http1_pool.ts";
import type { Dialer, DialTarget, TransportRequest } from "./http_transport.ts";
import { defaultDialer } from "./http_transport.ts";
import { ProviderError, ProviderTimeoutError } from "./provider_error.ts";
import { type BodySink, type BodySource, ProviderResponse } from "./provider_response.ts";

/** Where a URL's requests go and how their head starts. */
export interface Target extends DialTarget {
  /** The request target: path and query. */
  path: string;
  /** The `host` header: the host (IPv6 in brackets) and a port that is not the default. */
  hostHeader: string;
  /** The connection pool's key. */
  key: string;
}

const targets = new Map<string, Target>();
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/** Headers the transport writes itself. */
const OWN_HEADERS = new Set(["host", "content-length", "transfer-encoding", "connection"]);
const noop = () => {};

/** Parses an http(s) URL into where to connect (cached: a provider posts to few URLs). */
export function targetOf(url: string): Target {
  let target = targets.get(url);
  if (target) return target;
  const parsed = new URL(url);
  const secure = parsed.protocol === "https:";
  if (!secure && parsed.protocol !== "http:") throw new TypeError(`not an http(s) URL: ${url}`);
  const host = parsed.hostname.replace(/^\[(.*)\]$/, "$1");
  const port = parsed.port ? Number(parsed.port) : secure ? 443 : 80;
  target = {
    host,
    port,
    tls: secure,
    path: `${parsed.pathname}${parsed.search}`,
    hostHeader: parsed.host,
    key: poolKey(host, port, secure),
  };
  if (targets.size >= 64) targets.clear();
  targets.set(url, target);
  return target;
}

/** The request head and body as one string (one socket write). */
function requestText(request: TransportRequest, target: Target): string {
  let head = `POST ${target.path} HTTP/1.1\r\nhost: ${target.hostHeader}\r\n`;
  for (const name in request.headers) {
    const value = String(request.headers[name]);
    // A CR or LF would let a value start a header (or a request) of its own.
    if (!TOKEN.test(name) || /[\r\n\0]/.test(value)) {
      throw new TypeError(`invalid request header ${JSON.stringify(name)}`);
    }
    if (!OWN_HEADERS.has(name.toLowerCase())) head += `${name}: ${value}\r\n`;
  }
  return `${head}content-length: ${Buffer.byteLength(request.body)}\r\n\r\n${request.body}`;
}

/** One request in flight; settles its promise with the response or the reason it failed. */
export class Exchange implements BodySource {
  readonly #request: TransportRequest;
  readonly #target: Target;
  readonly #dial: Dialer;
  readonly #text: string;
  readonly #resolve: (response: ProviderResponse) => void;
  readonly #reject: (error: unknown) => void;
  #socket!: net.Socket;
  #parser!: Http1Parser;
  /** Whether the socket is ours (not yet back in the pool or closed). */
  #owned = false;
  #reused = false;
  #settled = false;
  #sink: BodySink | null = null;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #phase: "connect" | "first_byte" = "connect";
  #deadline = 0;
  #firesAt = Infinity;

  /** Sends `request` to `target` at once. */
  constructor(
    request: TransportRequest,
    target: Target,
    resolve: (response: ProviderResponse) => void,
    reject: (error: unknown) => void,
  ) {
    this.#request = request;
    this.#target = target;
    this.#dial = request.dial ?? defaultDialer;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#text = requestText(request, target);
    request.signal?.addEventListener("abort", this.#onAbort, { once: true });
    const kept = takeIdle(this.#dial, target.key);
    this.#start(() => kept ?? this.#dial(target), kept !== undefined);
  }

  /** Sends the request on the socket `open` returns, or fails with what it threw. */
  #start(open: () => net.Socket, reused: boolean): void {
    try {
      this.#use(open(), reused);
    } catch (error) {
      this.#fail(error);
    }
  }

  /** Sends the request on `socket`; a kept one is connected already. */
  #use(socket: net.Socket, reused: boolean): void {
    this.#socket = socket;
    this.#reused = reused;
    this.#owned = true;
    this.#parser = new Http1Parser(this.#events);
    socket.on("data", this.#onData);
    socket.on("end", this.#onEnd);
    socket.on("error", this.#onLost);
    socket.on("close", this.#onClose);
    if (reused) {
      this.#enter("first_byte", this.#request.timeouts.firstByteMs);
    } else {
      socket.setNoDelay(true);
      this.#enter("connect", this.#request.timeouts.connectMs);
      socket.once(this.#target.tls ? "secureConnect" : "connect", this.#connected);
    }
    // Written before the connection is up, it leaves with the handshake's end.
    socket.write(this.#text);
  }

  readonly #connected = () => this.#enter("first_byte", this.#request.timeouts.firstByteMs);

  /**
   * One timer for both phases: entering one moves the deadline, and the timer is set again
   * only when it fires early for the phase it finds, or would fire too late for the new one.
   */
  #enter(phase: "connect" | "first_byte", ms: number): void {
    this.#phase = phase;
    this.#deadline = performance.now() + ms;
    if (this.#deadline < this.#firesAt) this.#arm(ms);
  }

  #arm(ms: number): void {
    clearTimeout(this.#timer);
    this.#firesAt = performance.now() + ms;
    this.#timer = setTimeout(this.#check, ms);
  }

  readonly #check = () => {
    const left = this.#deadline - performance.now();
    if (left > 0) return this.#arm(left);
    const { provider, url, timeouts } = this.#request;
    const phase = this.#phase;
    const timeoutMs = phase === "connect" ? timeouts.connectMs : timeouts.firstByteMs;
    this.#fail(new ProviderTimeoutError(provider, { phase, timeoutMs, url }));
  };

  readonly #onAbort = () => this.#fail(this.#request.signal!.reason);

  readonly #onData = (chunk: Uint8Array) => {
    try {
      this.#parser.push(chunk);
    } catch (error) {
      this.#broken(error);
    }
  };

  readonly #onEnd = () => {
    if (!this.#parser.finish()) {
      this.#onLost(new Error("the server closed the connection before the response ended"));
    }
  };

  readonly #onClose = () => this.#onLost(new Error("the connection closed"));

  /**
   * The connection failed or closed under the request. A kept one that dies before any byte
   * of the response was most likely closed by the server as it was taken (the request never
   * reached it): sent again once on a new connection. Never after a byte of the response (the
   * server has the request), a timeout or a cancel (those settle first and close the socket).
   */
  readonly #onLost = (cause: unknown) => {
    if (!this.#owned) return;
    if (this.#reused && !this.#settled && !this.#parser.received) {
      this.#close();
      return this.#start(() => this.#dial(this.#target), false);
    }
    this.#broken(cause);
  };

  /** Ends the request or the body with `cause`, as a `provider.malformed` or `provider.stream`. */
  #broken(cause: unknown): void {
    const { provider, url } = this.#request;
    const error = cause instanceof Http1FramingError
      ? new ProviderError(
        "provider.malformed",
        provider,
        `the response from ${url} is malformed: ${cause.message}`,
        { cause },
      )
      : this.#settled
      ? new ProviderError(
        "provider.stream",
        provider,
        `the connection to ${url} broke mid-stream: ${errorMessage(cause)}`,
        { cause },
      )
      : cause;
    if (!this.#settled) return this.#fail(error);
    this.#close();
    this.#sink?.error(error as Error);
  }

  /** Fails the request before its response; closes the connection. */
  #fail(error: unknown): void {
    clearTimeout(this.#timer);
    this.#request.signal?.removeEventListener("abort", this.#onAbort);
    this.#close();
    if (this.#settled) return;
    this.#settled = true;
    this.#reject(error);
  }

  readonly #events = {
    head: (head: ResponseHead) => {
      const { status, rawHeaders } = head;
      // What a web Response could not carry either (101, or above 599) is no answer.
      if (status < 200 || status > 599) {
        return this.#fail(new RangeError(`the server answered with HTTP status ${status}`));
      }
      clearTimeout(this.#timer);
      const { signal, timeouts, provider, url } = this.#request;
      signal?.removeEventListener("abort", this.#onAbort);
      this.#settled = true;
      this.#resolve(
        new ProviderResponse(status, rawHeaders, this, {
          idleMs: timeouts.idleMs,
          signal,
          stalled: () =>
            new ProviderTimeoutError(provider, { phase: "idle", timeoutMs: timeouts.idleMs, url }),
        }),
      );
    },
    body: (chunk: Uint8Array) => this.#sink?.data(chunk),
    end: () => {
      if (!this.#owned) return;
      this.#detach();
      if (this.#parser.reusable && !this.#request.signal?.aborted) {
        release(this.#dial, this.#target.key, this.#socket);
      } else {
        this.#socket.destroy();
      }
      this.#sink?.end();
    },
  };

  /** Stops listening to the socket (it goes to the pool, or is closed). */
  #detach(): void {
    this.#owned = false;
    const socket = this.#socket;
    socket.off("data", this.#onData);
    socket.off("end", this.#onEnd);
    socket.off("error", this.#onLost);
    socket.off("close", this.#onClose);
    socket.off("connect", this.#connected);
    socket.off("secureConnect", this.#connected);
    if (socket.isPaused()) socket.resume();
  }

  /** Closes the connection if it is still the request's. */
  #close(): void {
    this.#parser?.stop();
    if (!this.#owned) return;
    this.#detach();
    // A late error of the closed socket must find a listener (or it would be thrown).
    this.#socket.on("error", noop);
    this.#socket.destroy();
  }

  /** Sets where the body goes. */
  listen(sink: BodySink): void {
    this.#sink = sink;
  }

  /** Stops reading the connection (the reader is behind). */
  pause(): void {
    if (this.#owned) this.#socket.pause();
  }

  /** Reads the connection again. */
  resume(): void {
    if (this.#owned) this.#socket.resume();
  }

  /** Closes the connection unless it is back in the pool already. */
  close(): void {
    this.#close();
  }
}
