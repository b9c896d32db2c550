/**
 * A provider's response once its headers are in: the status, the headers, and the body read
 * chunk by chunk straight from the connection's `data` events — no web `Response` or
 * `ReadableStream` in between (they cost ≈ 50 µs per request, and a provider request is made
 * per tool call). One idle timer per response, re-armed only when it fires, bounds how long a
 * read waits for the server; one abort listener per response cancels it.
 * @module
 */
/** Where the body arrives: each chunk, its end, or the error the connection failed with. */
export interface BodySink {
  /** The next piece of the body. */
  data(chunk: Uint8Array): void;
  /** The body is complete (its connection is back in the pool, or closed). */
  end(): void;
  /** The connection broke (reset, closed mid-body, malformed framing); it is closed. */
  error(error: Error): void;
}

/** The connection a body is read from. */
export interface BodySource {
  /** Sets where the body goes (called once, at once). */
  listen(sink: BodySink): void;
  /** Stops reading the connection: the reader is behind. */
  pause(): void;
  /** Reads the connection again. */
  resume(): void;
  /** Closes the connection, unless the body has ended (then it is no longer the body's). */
  close(): void;
}

/** How the body is read: the idle limit, cancellation, and the error a stall ends it with. */
export interface BodyOptions {
  /** How long one read may wait for the next chunk. */
  idleMs: number;
  /** Aborting fails the pending read (and every later one) with the signal's reason. */
  signal?: AbortSignal;
  /** The error a stall ends the body with. */
  stalled: () => Error;
}

/** How long a body abandoned before its end may take to finish, so its connection is reused. */
export const DRAIN_MS = 1000;

/** Body bytes read ahead of the reader before the connection is paused. */
const READ_AHEAD_BYTES = 64 * 1024;

/** A pending `read()`. */
interface Waiter {
  resolve(chunk: Uint8Array | null): void;
  reject(error: unknown): void;
}

/**
 * The response of one provider request. Read it with `read()` (or `text()`) to its end, or
 * `cancel()` it; either way the connection goes back to the pool or is closed.
 */
export class ProviderResponse {
  /** The HTTP status. */
  readonly status: number;
  readonly #raw: readonly string[];
  #headers: Headers | undefined;
  readonly #source: BodySource;
  readonly #options: BodyOptions;
  readonly #chunks: Uint8Array[] = [];
  #queuedBytes = 0;
  #paused = false;
  #ended = false;
  #draining = false;
  #failure: unknown = null;
  #waiter: Waiter | null = null;
  /** Resolves a `cancel()` that waits for the drain. */
  #drained: (() => void) | null = null;
  /** When the pending read began waiting (`performance.now()`). */
  #waitingSince = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  readonly #onAbort = () => this.#fail(this.#options.signal!.reason);

  /** Reads the body `source` delivers as `options` say; the caller has checked the signal. */
  constructor(
    status: number,
    rawHeaders: readonly string[],
    source: BodySource,
    options: BodyOptions,
  ) {
    this.status = status;
    this.#raw = rawHeaders;
    this.#source = source;
    this.#options = options;
    source.listen({
      data: (chunk) => {
        if (this.#draining) return;
        this.#chunks.push(chunk);
        this.#queuedBytes += chunk.length;
        if (this.#queuedBytes >= READ_AHEAD_BYTES && !this.#paused) {
          this.#paused = true;
          source.pause();
        }
        this.#wake();
      },
      end: () => {
        this.#ended = true;
        this.#settle();
      },
      error: (error) => this.#fail(error),
    });
    options.signal?.addEventListener("abort", this.#onAbort, { once: true });
  }

  /** True for a 2xx status. */
  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }

  /** The response headers (built on first use: the success path never asks). */
  get headers(): Headers {
    if (!this.#headers) {
      this.#headers = new Headers();
      for (let i = 0; i + 1 < this.#raw.length; i += 2) {
        this.#headers.append(this.#raw[i], this.#raw[i + 1]);
      }
    }
    return this.#headers;
  }

  /**
   * The next chunk of the body, or null at its end. Rejects with the `stalled` error when
   * nothing arrives within `idleMs`, the signal's reason when aborted, or a `broken` error.
   */
  read(): Promise<Uint8Array | null> {
    if (this.#chunks.length > 0) return Promise.resolve(this.#take());
    if (this.#failure !== null) return Promise.reject(this.#failure);
    if (this.#ended) return Promise.resolve(null);
    if (this.#waiter) return Promise.reject(new Error("one read at a time"));
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject };
      this.#waitingSince = performance.now();
      if (this.#timer === undefined) this.#arm(this.#options.idleMs);
    });
  }

  /** The whole body as text. */
  async text(): Promise<string> {
    const decoder = new TextDecoder();
    let text = "";
    for (let chunk = await this.read(); chunk !== null; chunk = await this.read()) {
      text += decoder.decode(chunk, { stream: true });
    }
    return text + decoder.decode();
  }

  /**
   * Stops reading. A body read to its end has freed its connection already; one abandoned
   * before its end (a provider stops at its last event) is read and dropped for up to
   * `DRAIN_MS`, so the connection can carry the next request — the promise resolves once it
   * is free (or closed). A failed or aborted response closes its connection at once.
   * Never rejects.
   */
  cancel(): Promise<void> {
    if (this.#ended) return Promise.resolve();
    if (this.#failure !== null || this.#options.signal?.aborted) {
      this.#source.close();
      this.#settle();
      return Promise.resolve();
    }
    this.#draining = true;
    this.#chunks.length = 0;
    this.#queuedBytes = 0;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        this.#drained = null;
        this.#source.close();
        resolve();
      }, DRAIN_MS);
      // The connection is back in the pool (or closed) by the body's end or failure.
      this.#drained = () => {
        clearTimeout(timer);
        resolve();
      };
      this.#paused = false;
      this.#source.resume();
    });
  }

  /** The first queued chunk; lets the connection go on once the reader has caught up. */
  #take(): Uint8Array {
    const chunk = this.#chunks.shift()!;
    this.#queuedBytes -= chunk.length;
    if (this.#paused && this.#queuedBytes < READ_AHEAD_BYTES) {
      this.#paused = false;
      this.#source.resume();
    }
    return chunk;
  }

  /** The idle timer: armed once per wait at most, re-armed for what is left when it fires. */
  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (!this.#waiter) return;
      const left = this.#options.idleMs - (performance.now() - this.#waitingSince);
      if (left > 0) this.#arm(left);
      else this.#fail(this.#options.stalled());
    }, ms);
  }

  /** Ends the body with `error` (the first failure wins) and closes the connection. */
  #fail(error: unknown): void {
    this.#failure ??= error;
    this.#source.close();
    this.#settle();
  }

  /** Hands a waiting read what there is now: a chunk, or the end. */
  #wake(): void {
    const waiter = this.#waiter;
    if (!waiter) return;
    this.#waiter = null;
    waiter.resolve(this.#take());
  }

  /** The body is over (ended or failed): no more timer or abort listener; wakes a read. */
  #settle(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#options.signal?.removeEventListener("abort", this.#onAbort);
    const drained = this.#drained;
    this.#drained = null;
    drained?.();
    const waiter = this.#waiter;
    if (!waiter) return;
    this.#waiter = null;
    this.read().then(waiter.resolve, waiter.reject);
  }
}
