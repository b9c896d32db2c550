/**
 * A cap on how many turns — and so sandboxes — one person runs at once (ATTACKS R14). Beyond
 * the cap a turn waits in a bounded first-come-first-served queue; beyond the queue it is
 * refused with `TurnLimitError`. Other people are unaffected: every person has their own count.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { TurnRefusedError } from "../errors/turn_refused.ts";
import type { CoopConfig } from "../config/config.ts";
import type { Route } from "./router.ts";

const log = getLogger(["coop", "gateway"]);

/** One person's cap, and the config key that set it (named in errors). */
export interface TurnLimit {
  /** Turns that may run at once. */
  concurrent: number;
  /** Turns that may wait for a slot beyond those. */
  queued: number;
  /** Where `concurrent` comes from, e.g. `[agent] max_concurrent_turns_per_user`. */
  setting: string;
}

/**
 * Returns the cap on the turns of `route`'s principal: their `[[users]] max_concurrent_turns`,
 * else `[agent] max_concurrent_turns_per_user`. The owner is exempt (null) unless their own
 * entry sets one: their commands run on the host, which they control anyway, and a cap would only
 * stand between them and their own machine.
 */
export function turnLimitFor(config: Pick<CoopConfig, "agent">, route: Route): TurnLimit | null {
  const own = route.user?.maxConcurrentTurns;
  if (own === undefined && route.principal.trust === "owner") return null;
  return {
    concurrent: own ?? config.agent.maxConcurrentTurnsPerUser,
    queued: config.agent.maxQueuedTurnsPerUser,
    setting: own === undefined
      ? "[agent] max_concurrent_turns_per_user"
      : `[[users]] "${route.user?.name}" max_concurrent_turns`,
  };
}

/**
 * The live session sandboxes one person may hold (`SessionSandboxes`' `maxPerPerson`): their turn
 * cap. A live sandbox outlives its turn; uncapped, a fresh session per request left one more each.
 */
export function liveSandboxCap(config: Pick<CoopConfig, "agent" | "users">, user: string): number {
  const own = config.users.find((u) => u.name === user)?.maxConcurrentTurns;
  return own ?? config.agent.maxConcurrentTurnsPerUser;
}

/** A turn refused because its person already has as many turns running and waiting as allowed. */
export class TurnLimitError extends TurnRefusedError {
  /** Whose turns (a user name, or `public:<sender>` for an unknown sender). */
  readonly user: string;
  /** The cap that was reached. */
  readonly limit: TurnLimit;
  constructor(user: string, limit: TurnLimit) {
    const { setting, concurrent, queued } = limit;
    super(
      "gateway.too_many_turns",
      `too many turns at once: ${concurrent} may run (${setting}) and ` +
        `${queued} may wait ([agent] max_queued_turns_per_user), and all are taken; ` +
        "try again when one has finished",
      {
        httpStatus: 429,
        reply: "I am already working on several of your messages; " +
          "please send this one again when I have answered them.",
        details: { limit: { setting, concurrent, queued } },
      },
    );
    this.name = "TurnLimitError";
    this.user = user;
    this.limit = limit;
  }
}

/** A turn let in by `TurnLimiter.admit`: it waits for a slot, runs, and gives it back. */
export interface TurnAdmission {
  /**
   * Resolves when the turn may run (slots go first come, first served); rejects with the
   * signal's reason when it aborts while waiting.
   */
  start(signal: AbortSignal): Promise<void>;
  /** Gives back the slot (if started) and the place; safe to call more than once. */
  done(): void;
}

/** One person's turns: running, plus every admitted turn not yet done. */
interface PersonTurns {
  running: number;
  admitted: number;
  /** Turns waiting for a slot, oldest first; each is granted by being called. */
  waiting: Array<() => void>;
}

/**
 * Counts each person's turns and enforces their `TurnLimit`.
 *
 * @example
 * ```ts
 * const admission = limiter.admit("bob", limit); // throws TurnLimitError when full
 * try {
 *   await admission.start(signal);
 *   await runTheTurn();
 * } finally {
 *   admission.done();
 * }
 * ```
 */
export class TurnLimiter {
  readonly #people = new Map<string, PersonTurns>();

  /**
   * Admits one turn of `user` or throws `TurnLimitError` when `limit.concurrent` of theirs run
   * and `limit.queued` more already wait (a turn waiting behind another of its session counts).
   */
  admit(user: string, limit: TurnLimit): TurnAdmission {
    const person = this.#people.get(user) ?? { running: 0, admitted: 0, waiting: [] };
    if (person.admitted >= limit.concurrent + limit.queued) {
      log.warn("gateway.turn.refused {user}: {running} running, {waiting} waiting", {
        event: "gateway.turn.refused",
        user,
        running: person.running,
        waiting: person.admitted - person.running,
        limit,
      });
      throw new TurnLimitError(user, limit);
    }
    person.admitted++;
    this.#people.set(user, person);
    let started = false;
    let finished = false;
    let queued: (() => void) | undefined;
    const leaveQueue = () => {
      const at = queued ? person.waiting.indexOf(queued) : -1;
      if (at >= 0) person.waiting.splice(at, 1);
      queued = undefined;
    };
    const release = () => {
      person.running--;
      while (person.running < limit.concurrent && person.waiting.length > 0) {
        person.running++;
        person.waiting.shift()!();
      }
    };
    return {
      start: (signal) => {
        if (started || finished) return Promise.reject(new Error("turn admission reused"));
        signal.throwIfAborted();
        if (person.running < limit.concurrent && person.waiting.length === 0) {
          person.running++;
          started = true;
          return Promise.resolve();
        }
        log.info("gateway.turn.queued {user}: {running} running", {
          event: "gateway.turn.queued",
          user,
          running: person.running,
          waiting: person.waiting.length + 1,
        });
        return new Promise<void>((resolve, reject) => {
          const onAbort = () => {
            leaveQueue();
            reject(signal.reason);
          };
          queued = () => {
            signal.removeEventListener("abort", onAbort);
            queued = undefined;
            started = true;
            resolve();
          };
          signal.addEventListener("abort", onAbort, { once: true });
          person.waiting.push(queued);
        });
      },
      done: () => {
        if (finished) return;
        finished = true;
        if (started) release();
        else leaveQueue();
        person.admitted--;
        if (person.admitted === 0) this.#people.delete(user);
      },
    };
  }

  /**
   * Each person's turns right now: `running` hold a slot; `waiting` are admitted and do not
   * (queued for a slot, or behind their session's previous turn). People with none are absent.
   */
  counts(): Record<string, { running: number; waiting: number }> {
    return Object.fromEntries(
      [...this.#people].map(([user, p]) => [user, {
        running: p.running,
        waiting: p.admitted - p.running,
      }]),
    );
  }
}
