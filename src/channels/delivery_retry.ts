/**
 * Retries a call to a messenger's service until it succeeds: rate limits (`retry_after`),
 * server errors and network failures are waited out with exponential backoff, so a reply is
 * delivered late rather than lost; only a refusal that retrying cannot change (a bad request,
 * a blocked bot) or the channel stopping ends it.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { abortableSleep } from "../sandbox/abortable_wait.ts";
import { CoopError } from "../errors/coop_error.ts";

const log = getLogger(["coop", "channel"]);

/** A failed call to a messenger service, its message free of secrets. */
export class ChannelDeliveryError extends CoopError {
  /** Whether trying again later may succeed (429, 5xx, network). */
  readonly retryable: boolean;
  /** How long the service asked us to wait (429 `retry_after`), when it said. */
  readonly retryAfterMs: number | undefined;
  constructor(
    code: string,
    message: string,
    failure: { retryable: boolean; retryAfterMs?: number },
  ) {
    super(code, message);
    this.name = "ChannelDeliveryError";
    this.retryable = failure.retryable;
    this.retryAfterMs = failure.retryAfterMs;
  }
}

/** Backoff between attempts: doubling from `baseMs` up to `maxMs`. */
export interface BackoffPolicy {
  baseMs: number;
  maxMs: number;
}

/** 250 ms doubling, at most 30 s per wait. */
export const DEFAULT_BACKOFF: Readonly<BackoffPolicy> = { baseMs: 250, maxMs: 30_000 };

/** The wait before attempt `attempt + 1` (0-based), with ±20 % jitter. */
export function backoffDelay(attempt: number, policy: Readonly<BackoffPolicy>): number {
  const base = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.min(attempt, 20));
  return Math.round(base * (0.8 + Math.random() * 0.4));
}

/**
 * Runs `call` until it succeeds; a retryable `ChannelDeliveryError` is waited out (its
 * `retryAfterMs`, else backoff), anything else is thrown, as is the signal's reason on abort.
 */
export async function deliverWithRetry<T>(
  what: { channel: string; method: string },
  call: () => Promise<T>,
  options: { signal?: AbortSignal; backoff?: Readonly<BackoffPolicy> } = {},
): Promise<T> {
  const policy = options.backoff ?? DEFAULT_BACKOFF;
  for (let attempt = 0;; attempt++) {
    options.signal?.throwIfAborted();
    try {
      return await call();
    } catch (error) {
      if (!(error instanceof ChannelDeliveryError) || !error.retryable) throw error;
      if (options.signal?.aborted) throw options.signal.reason;
      const delayMs = error.retryAfterMs ?? backoffDelay(attempt, policy);
      log.warning("channel.retry {channel} {method} in {delayMs} ms: {reason}", {
        event: "channel.retry",
        channel: what.channel,
        method: what.method,
        attempt: attempt + 1,
        delayMs,
        reason: error.message,
      });
      await abortableSleep(delayMs, options.signal);
    }
  }
}
