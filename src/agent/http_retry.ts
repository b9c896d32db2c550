/**
 * POSTs to a provider with bounded retries: exponential backoff with jitter, `retry-after`
 * honoured, on 408, 429, 5xx, connection errors and connect timeouts — only before the server
 * has the request, or has answered it with an error: a response that timed out waiting for its
 * headers, and a stream that has started, are never replayed.
 * @module
 */
import { errorMessage } from "../errors/coop_error.ts";
import { redactSecrets } from "../errors/secret_redaction.ts";
import { getLogger } from "@logtape/logtape";
import {
  DEFAULT_PROVIDER_TIMEOUTS,
  type Dialer,
  openRequest,
  type ProviderTimeouts,
} from "./http_transport.ts";
import { ProviderError, ProviderTimeoutError } from "./provider_error.ts";
import type { ProviderResponse } from "./provider_response.ts";
import { stringifyBody } from "./json_body.ts";
import { abortableSleep } from "../sandbox/abortable_wait.ts";

const log = getLogger(["coop", "agent", "provider"]);

/** How hard to retry. */
export interface RetryPolicy {
  /** Attempts in total, including the first (1 = never retry). */
  maxAttempts: number;
  /** Delay before the first retry; doubled each time. */
  baseDelayMs: number;
  /** Longest single wait; a `retry-after` above it gives up instead of waiting. */
  maxDelayMs: number;
}

/** Four attempts, 0.5 s doubling, at most 30 s per wait. */
export const DEFAULT_RETRY_POLICY: Readonly<RetryPolicy> = {
  maxAttempts: 4,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
};

/** What the HTTP layer may be given instead of the real network and clock (tests use fakes). */
export interface HttpDependencies {
  /** Opens each request's connection; default `defaultDialer` (`node:net`, `node:tls`). */
  dial?: Dialer;
  /** Default: an abortable `setTimeout`. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Default: `Math.random`; used for jitter. */
  random?: () => number;
}

/** One POST with a JSON body. */
export interface JsonPost {
  /** The configured provider name, for messages. */
  provider: string;
  url: string;
  headers: Record<string, string>;
  /** Serialized by `stringifyBody`: `JsonText` values at its top level go out as they are. */
  body: unknown;
}

/** How hard and how long to try a provider, and what to use instead of the network (tests). */
export interface SendPolicy {
  /** Default `DEFAULT_RETRY_POLICY`. */
  retry?: Readonly<RetryPolicy>;
  /** Default `DEFAULT_PROVIDER_TIMEOUTS`. */
  timeouts?: Readonly<ProviderTimeouts>;
  /** Default: the real network and clock. */
  http?: HttpDependencies;
}

/** How `postJson` sends: the send policy, and cancellation. */
export interface PostOptions extends SendPolicy {
  /** Cancels the request and any wait between attempts. */
  signal?: AbortSignal;
}

/** Parses `retry-after-ms`, or `retry-after` as seconds or an HTTP date, into milliseconds. */
export function retryAfterMs(headers: Headers, now: number = Date.now()): number | null {
  const ms = headers.get("retry-after-ms");
  if (ms !== null && /^\d+(\.\d+)?$/.test(ms.trim())) return Number(ms);
  const value = headers.get("retry-after")?.trim();
  if (!value) return null;
  if (/^\d+(\.\d+)?$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 429 || status >= 500;
}

/** Request headers whose value is a credential (the wire formats' and common proxies'). */
const CREDENTIAL_HEADER = /^(authorization|proxy-authorization|x-api-key|api-key|x-goog-api-key)$/i;

/**
 * The credentials a request carries: each such header's value, and the token after its scheme
 * (`Bearer sk-…` → `sk-…`). Servers quote a rejected key back in their error text.
 */
export function credentialsIn(headers: Readonly<Record<string, string>>): string[] {
  const found: string[] = [];
  for (const [name, value] of Object.entries(headers)) {
    if (!CREDENTIAL_HEADER.test(name)) continue;
    found.push(value);
    const token = /^\s*[A-Za-z]+\s+(\S.*)$/.exec(value)?.[1];
    if (token) found.push(token.trim());
  }
  // The longest first, so that a whole header value goes before the token inside it.
  return found.sort((a, b) => b.length - a.length);
}

/**
 * Reads at most 16 KiB of an error body and pulls out the server's message, without any of
 * `secrets`: it goes into errors and logs, and a server may echo the key it refused.
 */
async function errorDetail(
  response: ProviderResponse,
  secrets: readonly string[],
): Promise<string> {
  let text = "";
  try {
    text = (await response.text()).slice(0, 16 * 1024);
  } catch {
    return "";
  }
  try {
    const parsed = JSON.parse(text);
    const message = parsed?.error?.message ?? parsed?.message ?? parsed?.error;
    if (typeof message === "string") return redactSecrets(message, secrets);
  } catch {
    // Not JSON: show the text itself.
  }
  // Redacted before it is cut: a cut through a key would leave its first part unmatched.
  return redactSecrets(text.trim(), secrets).slice(0, 500);
}

/**
 * Sends `post` and returns the successful (2xx) response with its body unread (read it to its
 * end or `cancel()` it, so its connection is reused or closed).
 * Throws `ProviderError` (`provider.auth` on 401/403 without retrying, `provider.http` on other
 * 4xx, `provider.unavailable` when retries run out), `ProviderTimeoutError` (`provider.timeout`:
 * at once when the headers do not come, after the last attempt when connecting times out), or
 * the signal's reason when aborted.
 */
export async function postJson(
  post: JsonPost,
  options: PostOptions = {},
): Promise<ProviderResponse> {
  const { signal, http = {} } = options;
  const policy = options.retry ?? DEFAULT_RETRY_POLICY;
  const sleep = http.sleep ?? abortableSleep;
  const random = http.random ?? Math.random;
  const body = stringifyBody(post.body);
  const secrets = credentialsIn(post.headers);
  let lastProblem = "";
  let connectTimeout: ProviderTimeoutError | null = null;
  for (let attempt = 1;; attempt++) {
    signal?.throwIfAborted();
    let response: ProviderResponse | undefined;
    let waitMs: number | null = null;
    connectTimeout = null;
    try {
      response = await openRequest({
        provider: post.provider,
        url: post.url,
        headers: post.headers,
        body,
        timeouts: options.timeouts ?? DEFAULT_PROVIDER_TIMEOUTS,
        signal,
        dial: http.dial,
      });
    } catch (error) {
      if (signal?.aborted) throw signal.reason;
      // The server has the request and may be working on it: asking again would repeat the
      // work and multiply the wait, so only a connection that never came up is retried.
      if (error instanceof ProviderTimeoutError && error.phase !== "connect") throw error;
      if (error instanceof ProviderTimeoutError) connectTimeout = error;
      lastProblem = connectTimeout?.detail ??
        `cannot reach ${post.url}: ${redactSecrets(errorMessage(error), secrets)}`;
    }
    if (response !== undefined) {
      if (response.ok) return response;
      const detail = await errorDetail(response, secrets);
      const status = response.status;
      if (status === 401 || status === 403) {
        throw new ProviderError(
          "provider.auth",
          post.provider,
          `the server refused the API key (HTTP ${status}${detail ? `: ${detail}` : ""}); ` +
            "check the key in the environment variable named by api_key_env",
          { status },
        );
      }
      if (!isRetryableStatus(status)) {
        throw new ProviderError(
          "provider.http",
          post.provider,
          `HTTP ${status} from ${post.url}${detail ? `: ${detail}` : ""}`,
          { status },
        );
      }
      lastProblem = `HTTP ${status}${detail ? `: ${detail}` : ""}`;
      waitMs = retryAfterMs(response.headers);
      if (waitMs !== null && waitMs > policy.maxDelayMs) {
        throw new ProviderError(
          "provider.unavailable",
          post.provider,
          `${lastProblem}; the server asked to wait ${Math.ceil(waitMs / 1000)} s, longer than ` +
            `the ${policy.maxDelayMs / 1000} s Coop waits`,
          { status },
        );
      }
    }
    if (attempt >= policy.maxAttempts) {
      if (connectTimeout) {
        const { phase, timeoutMs, url } = connectTimeout;
        throw new ProviderTimeoutError(
          post.provider,
          { phase, timeoutMs, url, attempts: attempt },
          {
            cause: connectTimeout,
          },
        );
      }
      throw new ProviderError(
        "provider.unavailable",
        post.provider,
        `gave up after ${attempt} attempt${attempt === 1 ? "" : "s"}: ${lastProblem}`,
      );
    }
    const backoff = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
    // Full backoff from retry-after when given; otherwise half fixed, half random (jitter).
    const delay = waitMs ?? backoff * (0.5 + 0.5 * random());
    log.warn("provider.retry {provider} attempt {attempt}: {problem}; waiting {delayMs} ms", {
      provider: post.provider,
      attempt,
      problem: lastProblem,
      delayMs: Math.round(delay),
    });
    await sleep(delay, signal);
  }
}

/** What every provider's settings carry for reaching its server. */
export interface EndpointSettings extends SendPolicy {
  /** The configured provider name, for messages. */
  name: string;
  /** The server's base URL; `path` is appended after trailing slashes are dropped. */
  baseUrl: string;
}

/** One streaming request: the path after `base_url`, extra headers and the JSON body. */
export interface StreamRequest {
  path: string;
  /** Added to (or overriding) the JSON and SSE ones. */
  headers: Record<string, string>;
  body: unknown;
}

/**
 * POSTs a JSON body asking for a server-sent-event stream (`postJson` with the provider's retry
 * policy and timeouts).
 */
export function postForStream(
  settings: EndpointSettings,
  request: StreamRequest,
  signal?: AbortSignal,
): Promise<ProviderResponse> {
  return postJson(
    {
      provider: settings.name,
      url: `${settings.baseUrl.replace(/\/+$/, "")}${request.path}`,
      headers: {
        "content-type": "application/json",
        "accept": "text/event-stream",
        ...request.headers,
      },
      body: request.body,
    },
    { signal, retry: settings.retry, timeouts: settings.timeouts, http: settings.http },
  );
}
