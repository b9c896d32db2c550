/**
 * Steps that share a key run one after another, in the order they were queued; steps of other
 * keys are not held up. Used for a session's turns (the gateway) and for the sandboxes that
 * mount one overlay upper directory (overlayfs: two mounts of one upper at once give undefined
 * results).
 * @module
 */
import { abortableWait } from "./abortable_wait.ts";

/** The last step queued per key. */
export class SerialQueue {
  /** Per key, what the next step waits for; these never reject. */
  readonly #tails = new Map<string, Promise<unknown>>();

  /**
   * Runs `step` once the previous step of `key` is done (no key: at once, queued nowhere).
   * `signal` aborted before `step` starts (a turn cancelled while it waits): `step` never runs
   * and this rejects at once with the signal's reason; once it runs, the step is on its own.
   */
  after<T>(key: string | undefined, step: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    const turn = (key === undefined ? undefined : this.#tails.get(key)) ?? Promise.resolve();
    let ran = false;
    const result = abortableWait(turn, signal).then(() => {
      ran = true;
      return step();
    });
    if (key === undefined) return result;
    const forget = () => this.#tails.get(key) === tail && this.#tails.delete(key);
    // The next step waits for this one and the one before it: a step cancelled while it waits
    // must not let the next one start beside a step that still runs.
    const tail: Promise<unknown> = Promise.allSettled([turn, result]).then(forget);
    this.#tails.set(key, tail);
    // A step that ran is forgotten before its caller sees how it ended.
    return result.finally(() => ran && forget());
  }

  /** How many keys have a step running or waiting. */
  get size(): number {
    return this.#tails.size;
  }
}
