/**
 * `ChatQueues`: the messages of one chat are answered one after another, in the order they
 * arrived; different chats are answered at the same time.
 * @module
 */
import { abortableSleep } from "../sandbox/abortable_wait.ts";
import { DELIVERY_GRACE_MS } from "./chat_answer.ts";

/**
 * Runs tasks per chat in order, chats concurrently; `idle()` waits for everything queued.
 *
 * @example
 * ```ts
 * const queues = new ChatQueues();
 * queues.run("42", () => answer(update));
 * await queues.idle();
 * ```
 */
export class ChatQueues {
  readonly #tails = new Map<string, Promise<void>>();
  readonly #cancelDelivery = new AbortController();
  readonly #graceOver = new AbortController();

  /** Aborted when a cancelling `drain` gives up on replies still being sent. */
  get deliverySignal(): AbortSignal {
    return this.#cancelDelivery.signal;
  }

  /** Queues `task` behind the chat's earlier ones; its failure never stops the queue. */
  run(chat: string, task: () => Promise<void>): Promise<void> {
    const previous = this.#tails.get(chat) ?? Promise.resolve();
    const next = previous.then(task).catch(() => {});
    this.#tails.set(chat, next);
    next.then(() => {
      if (this.#tails.get(chat) === next) this.#tails.delete(chat);
    });
    return next;
  }

  /** Chats with something queued or running. */
  get busy(): number {
    return this.#tails.size;
  }

  /**
   * Waits for everything queued. With `cancel` (the turns were cancelled), a reply already on
   * its way gets `DELIVERY_GRACE_MS` to finish — cancelled, it would be sent again after a
   * restart — then the deliveries still running are aborted (`deliverySignal`).
   */
  async drain(options: { cancel?: boolean } = {}): Promise<void> {
    if (options.cancel) {
      const grace = abortableSleep(DELIVERY_GRACE_MS, this.#graceOver.signal).catch(() => {});
      await Promise.race([this.idle(), grace]);
      this.#graceOver.abort();
      this.#cancelDelivery.abort();
    }
    await this.idle();
  }

  /** Resolves once every task queued so far has ended. */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.all([...this.#tails.values()]);
  }
}
