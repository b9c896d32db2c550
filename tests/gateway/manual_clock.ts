/**
 * A clock for scheduler tests: time moves only when the test calls `advance`, which fires the
 * due timers in order and lets the promises they start settle.
 * @module
 */
import type { CronClock } from "../../src/cron/cron_scheduler.ts";

interface Timer {
  at: number;
  seq: number;
  fn: () => void;
}

/** Lets queued promise callbacks (and zero-delay timers of real I/O) run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0));
}

/** A manual clock implementing `CronClock`. */
export class ManualClock implements CronClock {
  #now: number;
  #seq = 0;
  #timers: Timer[] = [];
  /** Every delay requested, for asserting the scheduler's arithmetic. */
  readonly delays: number[] = [];

  constructor(start: number) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): () => void {
    this.delays.push(ms);
    const timer = { at: this.#now + ms, seq: this.#seq++, fn };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** Pending timers. */
  get pending(): number {
    return this.#timers.length;
  }

  /** Moves time forward by `ms`, firing each timer at its own instant. */
  async advance(ms: number): Promise<void> {
    const target = this.#now + ms;
    for (;;) {
      this.#timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = this.#timers[0];
      if (!next || next.at > target) break;
      this.#timers.shift();
      this.#now = next.at;
      next.fn();
      await settle();
    }
    this.#now = target;
    await settle();
  }
}
