import { assert, assertEquals } from "../assert.ts";
import { SerialQueue } from "../../src/sandbox/serial_queue.ts";
import { until } from "./harness.ts";

Deno.test("steps of one key run one at a time, in order; other keys run alongside", async () => {
  const queue = new SerialQueue();
  const running = new Map<string, number>();
  const most = new Map<string, number>();
  const order: string[] = [];
  const step = (key: string, name: string, ms: number) => async () => {
    running.set(key, (running.get(key) ?? 0) + 1);
    most.set(key, Math.max(most.get(key) ?? 0, running.get(key)!));
    await new Promise((r) => setTimeout(r, ms));
    order.push(name);
    running.set(key, running.get(key)! - 1);
    if (name === "a2") throw new Error("a failed step does not stop the next");
  };
  const all = [
    queue.after("a", step("a", "a1", 30)),
    queue.after("a", step("a", "a2", 10)).catch(() => {}),
    queue.after("a", step("a", "a3", 1)),
    queue.after("b", step("b", "b1", 5)),
    queue.after(undefined, step("-", "free", 1)),
  ];
  await Promise.all(all);
  assertEquals(most.get("a"), 1);
  assertEquals(order.filter((n) => n.startsWith("a")), ["a1", "a2", "a3"]);
  assertEquals(order.indexOf("b1") < order.indexOf("a1"), true, "b did not wait for a");
  assertEquals(queue.size, 0, "nothing is kept once every step is done");
});

Deno.test("a step cancelled while it waits never runs; the next still waits its turn", async () => {
  const queue = new SerialQueue();
  const order: string[] = [];
  let release!: () => void;
  const first = queue.after("a", async () => {
    order.push("first started");
    await new Promise<void>((resolve) => release = resolve);
    order.push("first ended");
  });
  const cancel = new AbortController();
  const cancelled = queue.after("a", () => {
    order.push("cancelled ran");
    return Promise.resolve();
  }, cancel.signal);
  const third = queue.after("a", () => {
    order.push("third ran");
    return Promise.resolve();
  });
  assert(await until(() => order.length === 1, 5000), "the first step started");
  const reason = new Error("stopped");
  cancel.abort(reason);
  // Rejected while the first step still runs: the cancel ends the wait, not the first step.
  assertEquals(await cancelled.catch((error) => error), reason);
  // A timer's turn: time for anything wrongly let through to start.
  await new Promise((resolve) => setTimeout(resolve, 0));
  assertEquals(order, ["first started"], "nothing started beside the running step");
  release();
  await Promise.all([first, third]);
  assertEquals(order, ["first started", "first ended", "third ran"]);
  assertEquals(queue.size, 0, "nothing is kept once every step is done");
  // Already cancelled: never runs, even with nothing ahead of it.
  const early = new AbortController();
  early.abort(reason);
  const never = queue.after("b", () => Promise.resolve(order.push("never ran")), early.signal);
  assertEquals(await never.catch((error) => error), reason);
  await queue.after("b", () => Promise.resolve());
  assertEquals(order.includes("never ran"), false);
  assertEquals(queue.size, 0);
});
