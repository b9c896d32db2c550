/**
 * `ChatQueues`: the messages of one chat are answered one after another, in the order they
 * arrived; different chats are answered at the same time.
 * @module
 */

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

  /** Resolves once every task queued so far has ended. */
  async idle(): Promise<void> {
    while (this.#tails.size > 0) await Promise.all([...this.#tails.values()]);
  }
}
