/**
 * Runs `[[cron]]` jobs on their schedules. A job never overlaps itself (a tick that finds it
 * still running is skipped and logged); a failed run is logged and the job simply runs again at
 * its next tick. The clock and the turn runner are injected, so tests need no provider or time.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import type { CronJobConfig } from "../config/config.ts";
import { nextCronRun } from "../config/cron_schedule.ts";

const log = getLogger(["coop", "cron"]);

/** Longest single timer: `setTimeout` fires at once for delays past 2^31-1 ms (~24.8 days). */
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Time as the scheduler sees it; tests use a manual clock. */
export interface CronClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once after about `ms` milliseconds; the returned function cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

/** The real clock: `Date.now` and `setTimeout`. */
export const systemClock: CronClock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    const id = setTimeout(fn, ms);
    return () => clearTimeout(id);
  },
};

/** What a cron turn produced. */
export interface CronTurnResult {
  /** The agent's reply text. */
  reply: string;
  /** The session the turn was recorded in, if any. */
  session?: string;
}

/**
 * Runs one turn of `job` as `job.user` (with that user's trust and the job's sandbox overrides);
 * `signal` aborts it when the scheduler stops. The gateway supplies it; tests fake it.
 */
export type CronTurnRunner = (job: CronJobConfig, signal: AbortSignal) => Promise<CronTurnResult>;

/** What is sent to a job's `reply_to` callback (and logged for `reply_to = "log"`). */
export interface CronReplyPayload {
  /** The job's name. */
  job: string;
  /** The user it ran as. */
  user: string;
  /** False when the turn failed; `error` then says why. */
  ok: boolean;
  /** The reply, when `ok`. */
  reply?: string;
  /** The session of the turn, when known. */
  session?: string;
  /** Why the turn failed, when not `ok`. */
  error?: string;
  /** The tick this run belongs to (ISO 8601). */
  scheduledAt: string;
  /** When the run finished (ISO 8601). */
  finishedAt: string;
}

/** A job's state, for `coop start`'s status and for tests. */
export interface CronJobStatus {
  /** The job's name. */
  name: string;
  /** The next tick (ms since the epoch), or null when the schedule never fires again. */
  nextRunAt: number | null;
  /** True while a run is in progress. */
  running: boolean;
  /** Runs started. */
  runs: number;
  /** Runs that failed (the turn threw). */
  failures: number;
  /** Ticks skipped because the previous run was still going. */
  skipped: number;
  /** Replies that could not be delivered to the callback. */
  deliveryFailures: number;
  /** The last failure's message, if any. */
  lastError: string | null;
}

/** A scheduler misuse, with a stable code. */
export class CronSchedulerError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "CronSchedulerError";
  }
}

/** What the scheduler needs. */
export interface CronSchedulerOptions {
  /** The configured jobs. */
  jobs: readonly CronJobConfig[];
  /** Runs a turn for a job. */
  runTurn: CronTurnRunner;
  /** Default: `systemClock`. */
  clock?: CronClock;
  /** IANA zone the schedules are read in. Default: the gateway's local zone. */
  timezone?: string;
  /** Used for HTTP callbacks. Default: the global `fetch`. */
  fetch?: typeof fetch;
  /** How long a callback may take. Default 10 s. */
  callbackTimeoutMs?: number;
}

interface JobState {
  job: CronJobConfig;
  status: CronJobStatus;
  cancelTimer: (() => void) | null;
  run: Promise<void> | null;
}

/**
 * Schedules `[[cron]]` jobs.
 *
 * @example
 * ```ts
 * const cron = new CronScheduler({ jobs: config.cron, runTurn: (job, signal) => turn(job, signal) });
 * cron.start();
 * // on SIGTERM:
 * await cron.stop();
 * ```
 */
export class CronScheduler {
  readonly #clock: CronClock;
  readonly #runTurn: CronTurnRunner;
  readonly #timezone: string | undefined;
  readonly #fetch: typeof fetch;
  readonly #callbackTimeoutMs: number;
  readonly #jobs: JobState[];
  readonly #abort = new AbortController();
  #started = false;

  constructor(options: CronSchedulerOptions) {
    this.#clock = options.clock ?? systemClock;
    this.#runTurn = options.runTurn;
    this.#timezone = options.timezone;
    this.#fetch = options.fetch ?? fetch;
    this.#callbackTimeoutMs = options.callbackTimeoutMs ?? 10_000;
    const names = new Set<string>();
    this.#jobs = options.jobs.map((job) => {
      if (names.has(job.name)) {
        throw new CronSchedulerError(
          "cron.duplicate_job",
          `cron job "${job.name}" is defined twice`,
        );
      }
      names.add(job.name);
      try {
        nextCronRun(job.schedule, 0, this.#timezone);
      } catch (error) {
        throw new CronSchedulerError(
          "cron.invalid_schedule",
          `cron job "${job.name}": invalid schedule "${job.schedule}": ${errorMessage(error)}`,
          { cause: error },
        );
      }
      return {
        job,
        cancelTimer: null,
        run: null,
        status: {
          name: job.name,
          nextRunAt: null,
          running: false,
          runs: 0,
          failures: 0,
          skipped: 0,
          deliveryFailures: 0,
          lastError: null,
        },
      };
    });
  }

  /** Arms every job's next tick; ticks that passed while Coop was down are not caught up. */
  start(): void {
    if (this.#started) throw new CronSchedulerError("cron.started", "the scheduler is running");
    if (this.#abort.signal.aborted) {
      throw new CronSchedulerError("cron.stopped", "a stopped scheduler cannot be restarted");
    }
    this.#started = true;
    for (const state of this.#jobs) this.#arm(state, this.#clock.now());
  }

  /** Cancels every timer, aborts runs in progress and waits for them to finish. */
  async stop(): Promise<void> {
    this.#abort.abort(new CronSchedulerError("cron.stopped", "the gateway is shutting down"));
    for (const state of this.#jobs) {
      state.cancelTimer?.();
      state.cancelTimer = null;
      state.status.nextRunAt = null;
    }
    await this.whenIdle();
  }

  /** Resolves when no job is running. */
  async whenIdle(): Promise<void> {
    while (this.#jobs.some((s) => s.run !== null)) {
      await Promise.all(this.#jobs.map((s) => s.run));
    }
  }

  /** Returns a snapshot of every job's state. */
  status(): CronJobStatus[] {
    return this.#jobs.map((s) => ({ ...s.status }));
  }

  /** Sets the timer for the first tick strictly after `after`. */
  #arm(state: JobState, after: number): void {
    if (this.#abort.signal.aborted) return;
    const due = nextCronRun(state.job.schedule, after, this.#timezone);
    state.status.nextRunAt = due;
    if (due === null) {
      log.warn("cron.never_runs", {
        event: "cron.never_runs",
        job: state.job.name,
        schedule: state.job.schedule,
      });
      return;
    }
    this.#wait(state, due);
  }

  #wait(state: JobState, due: number): void {
    const delay = Math.min(Math.max(0, due - this.#clock.now()), MAX_TIMER_MS);
    state.cancelTimer = this.#clock.setTimer(delay, () => {
      state.cancelTimer = null;
      // Timers can fire early (clamped long delays, clock adjustments): wait out the rest.
      if (this.#clock.now() < due) return this.#wait(state, due);
      this.#tick(state, due);
      this.#arm(state, Math.max(due, this.#clock.now()));
    });
  }

  #tick(state: JobState, due: number): void {
    const job = state.job;
    if (state.run !== null) {
      state.status.skipped++;
      log.warn("cron.skipped", {
        event: "cron.skipped",
        job: job.name,
        reason: "still_running",
        scheduledAt: new Date(due).toISOString(),
      });
      return;
    }
    state.status.runs++;
    state.status.running = true;
    log.info("cron.start", { event: "cron.start", job: job.name, user: job.user });
    state.run = this.#execute(state, due).finally(() => {
      state.run = null;
      state.status.running = false;
    });
  }

  async #execute(state: JobState, due: number): Promise<void> {
    const job = state.job;
    const scheduledAt = new Date(due).toISOString();
    let payload: CronReplyPayload;
    try {
      const result = await this.#runTurn(job, this.#abort.signal);
      payload = {
        job: job.name,
        user: job.user,
        ok: true,
        reply: result.reply,
        session: result.session,
        scheduledAt,
        finishedAt: new Date(this.#clock.now()).toISOString(),
      };
      state.status.lastError = null;
      log.info("cron.done", { event: "cron.done", job: job.name, session: result.session });
    } catch (error) {
      state.status.failures++;
      state.status.lastError = errorMessage(error);
      // Nothing to retry here: the next tick runs the job again.
      log.error("cron.failed", {
        event: "cron.failed",
        job: job.name,
        error: state.status.lastError,
        nextRunAt: nextCronRun(job.schedule, Math.max(due, this.#clock.now()), this.#timezone),
      });
      payload = {
        job: job.name,
        user: job.user,
        ok: false,
        error: state.status.lastError,
        scheduledAt,
        finishedAt: new Date(this.#clock.now()).toISOString(),
      };
    }
    await this.#deliver(state, payload);
  }

  async #deliver(state: JobState, payload: CronReplyPayload): Promise<void> {
    const target = state.job.replyTo;
    if (target.kind === "log") {
      // The reply is the point of a "log" job: it is in the message, not only in the properties.
      log.info("cron.reply {job} as {user}: {outcome}", {
        event: "cron.reply",
        ...payload,
        outcome: payload.ok ? payload.reply : `failed: ${payload.error}`,
      });
      return;
    }
    try {
      const response = await this.#fetch(target.url, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(payload),
        signal: AbortSignal.timeout(this.#callbackTimeoutMs),
        redirect: "error",
      });
      await response.body?.cancel();
      if (!response.ok) throw new Error(`the callback answered HTTP ${response.status}`);
      log.info("cron.delivered", {
        event: "cron.delivered",
        job: payload.job,
        status: response.status,
      });
    } catch (error) {
      state.status.deliveryFailures++;
      log.error("cron.delivery_failed", {
        event: "cron.delivery_failed",
        job: payload.job,
        // The URL may carry a token in its query; log the origin only — also where the fetch
        // error quotes the whole URL ("error sending request for url (…?token=…)").
        callback: new URL(target.url).origin,
        error: withoutUrl(errorMessage(error), target.url),
      });
    }
  }
}

/** `message` with every copy of `url` (as written, and as the URL parser spells it) cut to its origin. */
function withoutUrl(message: string, url: string): string {
  const parsed = new URL(url);
  return [url, parsed.href].reduce(
    (text, spelling) => text.replaceAll(spelling, `${parsed.origin}/…`),
    message,
  );
}
