/**
 * `ProviderError`: every way talking to an LLM API can fail, with a stable code.
 * @module
 */
import { CoopError } from "../errors/coop_error.ts";

/** Stable codes of provider failures. */
export type ProviderErrorCode =
  | "provider.not_configured"
  | "provider.missing_key"
  | "provider.auth"
  | "provider.http"
  | "provider.unavailable"
  | "provider.timeout"
  | "provider.malformed"
  | "provider.stream"
  | "provider.unknown";

/** A failure to get an answer from a provider, naming the provider and what to do. */
export class ProviderError extends CoopError {
  /** The configured provider name. */
  readonly provider: string;
  /** The HTTP status, when the failure was an HTTP response. */
  readonly status: number | null;
  /** The message without the `provider "<name>": ` prefix (to quote it in another message). */
  readonly detail: string;
  constructor(
    code: ProviderErrorCode,
    provider: string,
    message: string,
    options: ErrorOptions & { status?: number } = {},
  ) {
    super(code, `provider "${provider}": ${message}`, options);
    this.name = "ProviderError";
    this.provider = provider;
    this.status = options.status ?? null;
    this.detail = message;
  }
}

/** Which wait ran out: connecting (TCP and TLS), the response headers, or the next stream chunk. */
export type ProviderTimeoutPhase = "connect" | "first_byte" | "idle";

/** The `[[providers]]` key that sets each timeout, named in the error so the user can raise it. */
export const TIMEOUT_CONFIG_KEYS: Readonly<Record<ProviderTimeoutPhase, string>> = {
  connect: "connect_timeout",
  first_byte: "first_byte_timeout",
  idle: "idle_timeout",
};

function showMs(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}

const WAITED_FOR: Readonly<Record<ProviderTimeoutPhase, (url: string) => string>> = {
  connect: (url) => `no connection to ${url}`,
  first_byte: (url) => `connected to ${url}, but no response headers arrived`,
  idle: (url) => `the response stream from ${url} stalled: nothing arrived`,
};

/** A provider that did not connect, answer or go on streaming within its configured time. */
export class ProviderTimeoutError extends ProviderError {
  /** Which wait ran out. */
  readonly phase: ProviderTimeoutPhase;
  /** The limit that was exceeded, in milliseconds. */
  readonly timeoutMs: number;
  /** The URL requested. */
  readonly url: string;
  /** `attempts` (default 1) above 1 says how many connects were tried. */
  constructor(
    provider: string,
    timeout: { phase: ProviderTimeoutPhase; timeoutMs: number; url: string; attempts?: number },
    options: ErrorOptions = {},
  ) {
    const { phase, timeoutMs, url, attempts = 1 } = timeout;
    super(
      "provider.timeout",
      provider,
      (attempts > 1 ? `gave up after ${attempts} attempts: ` : "") +
        `${WAITED_FOR[phase](url)} within ${showMs(timeoutMs)} ` +
        `(${TIMEOUT_CONFIG_KEYS[phase]} of [[providers]] "${provider}")`,
      options,
    );
    this.name = "ProviderTimeoutError";
    this.phase = phase;
    this.timeoutMs = timeoutMs;
    this.url = url;
  }
}
