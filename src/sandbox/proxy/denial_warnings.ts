/**
 * `DenialWarnings`: the gateway's log of one sandbox's proxy denials, bounded. A command that
 * loops on a refused connection is refused thousands of times a second, for as long as a live
 * session lasts (hours), and the command may be an untrusted user's: one warning per denial would
 * flood the gateway's log. So the log comes in windows: the first few distinct denials of a
 * window are logged as they happen, the rest are only counted, and one summary says how many and
 * how many in all — when the window ends, and when the proxy closes. Every denial is still in
 * the proxy's `denials` (the latest) and `denialCount`, and so in the command's result.
 * @module
 */
import { clearTimeout, setTimeout } from "node:timers";
import { getLogger } from "@logtape/logtape";
import type { ProxyDenial } from "./policy_proxy.ts";

const log = getLogger(["coop", "sandbox"]);

/** Distinct denials logged one by one per window; the window's others are counted. */
export const DENIAL_WARNINGS_PER_WINDOW = 5;

/** How long a window lasts from its first denial; at most one summary per window. */
export const DENIAL_WINDOW_MS = 60_000;

/** Options of `DenialWarnings`. */
export interface DenialWarningsOptions {
  /** The sandbox's command (`argv[0]`), named in every line. */
  command: string;
  /** Log at debug level: denials the caller provoked on purpose (the self-test's). */
  expected?: boolean;
  /** A window's length; default `DENIAL_WINDOW_MS`. */
  windowMs?: number;
  /**
   * Test hook: sets the timer that ends a window (default: an unref'd `setTimeout`) and returns
   * what clears it.
   */
  setTimer?: (onEnd: () => void, ms: number) => () => void;
}

function unrefTimer(onEnd: () => void, ms: number): () => void {
  const timer = setTimeout(onEnd, ms);
  // A process that exits without closing its proxies has no sandboxes left to summarize.
  timer.unref();
  return () => clearTimeout(timer);
}

/**
 * One sandbox's denial log: `denied()` for each denial, `end()` once the proxy closed.
 *
 * @example
 * ```ts
 * const warnings = new DenialWarnings({ command: "curl" });
 * const proxy = await startPolicyProxy({
 *   allowDomains: [],
 *   onDenied: (denial) => warnings.denied(denial),
 *   onClosed: () => warnings.end(),
 * });
 * ```
 */
export class DenialWarnings {
  readonly #command: string;
  readonly #expected: boolean;
  readonly #windowMs: number;
  /** The distinct denials (`host port reason`) logged in the open window. */
  readonly #warned = new Set<string>();
  readonly #setTimer: (onEnd: () => void, ms: number) => () => void;
  /** Clears the timer that ends the open window; undefined while none is open. */
  #clearTimer: (() => void) | undefined;
  #suppressed = 0;
  #latest: ProxyDenial | undefined;
  #total = 0;
  #ended = false;

  /** A log for the sandbox running `options.command`. */
  constructor(options: DenialWarningsOptions) {
    this.#command = options.command;
    this.#expected = options.expected ?? false;
    this.#windowMs = options.windowMs ?? DENIAL_WINDOW_MS;
    this.#setTimer = options.setTimer ?? unrefTimer;
  }

  /** Logs `denial`, or counts it when its window has logged enough. */
  denied(denial: ProxyDenial): void {
    this.#total++;
    if (!this.#clearTimer && !this.#ended) {
      this.#clearTimer = this.#setTimer(() => this.#closeWindow(), this.#windowMs);
    }
    const key = `${denial.host} ${denial.port} ${denial.reason}`;
    if (this.#warned.size < DENIAL_WARNINGS_PER_WINDOW && !this.#warned.has(key)) {
      this.#warned.add(key);
      this.#write("sandbox.proxy_denied {command}: {host}:{port} {reason}", {
        event: "sandbox.proxy_denied",
        command: this.#command,
        ...denial,
      });
      return;
    }
    this.#suppressed++;
    this.#latest = denial;
  }

  /** The proxy closed: logs the summary of what is still uncounted; no timer is left. */
  end(): void {
    this.#ended = true;
    this.#clearTimer?.();
    this.#clearTimer = undefined;
    this.#summarize();
  }

  #closeWindow(): void {
    this.#clearTimer = undefined;
    this.#warned.clear();
    this.#summarize();
  }

  #summarize(): void {
    if (this.#suppressed === 0) return;
    const latest = this.#latest!;
    this.#write(
      "sandbox.proxy_denied.suppressed {command}: {suppressed} more denials not logged one by " +
        "one ({total} in all); the latest: {host}:{port} {reason}",
      {
        event: "sandbox.proxy_denied.suppressed",
        command: this.#command,
        suppressed: this.#suppressed,
        total: this.#total,
        ...latest,
      },
    );
    this.#suppressed = 0;
    this.#latest = undefined;
  }

  #write(message: string, fields: Record<string, unknown>): void {
    if (this.#expected) log.debug(message, fields);
    else log.warn(message, fields);
  }
}
