import { assertEquals } from "../assert.ts";
import { abortableSleep, abortableWait } from "../../src/sandbox/abortable_wait.ts";

Deno.test("abortableWait: settles as its promise, or with the signal's reason once aborted", async () => {
  assertEquals(await abortableWait(Promise.resolve(1), new AbortController().signal), 1);
  const failed = new Error("failed");
  assertEquals(
    await abortableWait(Promise.reject(failed), new AbortController().signal).catch((e) => e),
    failed,
  );
  const cancel = new AbortController();
  const reason = new Error("stopped");
  const never = new Promise<never>(() => {});
  const waiting = abortableWait(never, cancel.signal);
  cancel.abort(reason);
  assertEquals(await waiting.catch((e) => e), reason, "ended by the abort, not by the promise");
  assertEquals(await abortableWait(never, cancel.signal).catch((e) => e), reason, "aborted first");
});

Deno.test("abortableSleep: ends early with the signal's reason, its timer cleared", async () => {
  const cancel = new AbortController();
  const reason = new Error("stopped");
  // A leaked timer of an hour would fail Deno's op sanitizer for this test.
  const sleeping = abortableSleep(3_600_000, cancel.signal);
  cancel.abort(reason);
  assertEquals(await sleeping.catch((e) => e), reason);
  assertEquals(await abortableSleep(1), undefined);
});
