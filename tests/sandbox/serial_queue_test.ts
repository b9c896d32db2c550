import { assertEquals } from "../assert.ts";
import { SerialQueue } from "../../src/sandbox/serial_queue.ts";

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
