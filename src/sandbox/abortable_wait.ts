/**
 * Waits that end as soon as an `AbortSignal` aborts, rejecting with its reason — as
 * `signal.throwIfAborted()` does — so that a cancelled caller (a stopped turn, a draining gateway)
 * does not sit out a pause, or another sandbox's turn, before it notices.
 * @module
 */

/**
 * Waits `ms`, or rejects with the signal's reason as soon as it is aborted.
 *
 * @example
 * ```ts
 * const cancel = new AbortController();
 * await abortableSleep(50, cancel.signal); // resolves after 50 ms unless cancelled
 * ```
 */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Settles as `promise` does, or rejects with the signal's reason as soon as it is aborted
 * (already aborted: at once). What `promise` stands for goes on; its outcome is then ignored.
 *
 * @example
 * ```ts
 * const cancel = new AbortController();
 * const turn = abortableWait(otherStepDone, cancel.signal);
 * cancel.abort(new Error("stopped")); // `turn` rejects with it now, not when the step is done
 * ```
 */
export function abortableWait<T>(promise: Promise<T>, signal?: AbortSignal): Promise<T> {
  if (!signal) return promise;
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}
