/**
 * Turns of one session run one after another: two requests for one session at once would
 * interleave their messages in its history.
 * @module
 */
import type { SessionKey } from "../state/session_store.ts";
import { SerialQueue } from "../sandbox/serial_queue.ts";

/** The last step queued per session; steps of one session run in the order they were queued. */
export class SessionQueue {
  readonly #queue = new SerialQueue();

  /** Runs `step` once the session's previous step is done (no key: at once, queued nowhere). */
  after<T>(key: SessionKey | undefined, step: () => Promise<T>): Promise<T> {
    const tail = key === undefined ? undefined : [key.channel, key.user, key.session].join("\0");
    return this.#queue.after(tail, step);
  }
}
