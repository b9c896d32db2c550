/**
 * Steps that share a key run one after another, in the order they were queued; steps of other
 * keys are not held up. Used for a session's turns (the gateway) and for the sandboxes that
 * mount one overlay upper directory (overlayfs: two mounts of one upper at once give undefined
 * results).
 * @module
 */

/** The last step queued per key. */
export class SerialQueue {
  readonly #tails = new Map<string, Promise<unknown>>();

  /** Runs `step` once the previous step of `key` is done (no key: at once, queued nowhere). */
  after<T>(key: string | undefined, step: () => Promise<T>): Promise<T> {
    const previous = key === undefined ? undefined : this.#tails.get(key);
    const next = (previous ? previous.then(step, step) : Promise.resolve().then(step)).finally(
      () => {
        if (key !== undefined && this.#tails.get(key) === next) this.#tails.delete(key);
      },
    );
    if (key !== undefined) this.#tails.set(key, next);
    return next;
  }

  /** How many keys have a step running or waiting. */
  get size(): number {
    return this.#tails.size;
  }
}
