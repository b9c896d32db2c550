/**
 * ATTACKS R12, workspace scan stall: 800,000 directories at the top of bob's workspace, then a
 * call of his through the executor. The scans before and after a call run off the event loop,
 * so a timer on that loop — standing in for everyone else's requests and `/healthz` — is never
 * late by more than 50 ms beyond what the machine's load alone makes it, and its thread is never
 * busy for 50 ms (see `watchLoop`); and the call fails closed with a message that says why and what to
 * do. The directories are made on tmpfs (/dev/shm) so that making and removing them takes
 * seconds, not minutes.
 */
import { ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { parseConfig } from "../../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../../src/tools/tool_executor.ts";
import { SANDBOX_TESTS } from "../harness.ts";

const DIRECTORIES = 800_000;
const MAX_LAG_MS = 50;
/** A control lateness below this: the machine is quiet enough for lateness to mean a stall. */
const QUIET_LAG_MS = 15;

/**
 * The event loop's thread's scheduler counters in milliseconds — time on a CPU, time runnable but
 * waiting for one — from `/proc/thread-self/schedstat` (read synchronously, so by that thread
 * itself: under `deno test` it is not the process's main thread); null where not reported.
 */
function loopThreadTimes(): { cpu: number; waiting: number } | null {
  try {
    const [cpu, waiting] = Deno.readTextFileSync("/proc/thread-self/schedstat").split(" ");
    return { cpu: Number(cpu) / 1e6, waiting: Number(waiting) / 1e6 };
  } catch {
    return null;
  }
}

/** What a 5 ms interval timer on this event loop saw while `work` ran. */
interface LoopWatch<T> {
  /** Its largest delay, less in each interval the time the thread waited for a CPU. */
  lag: number;
  /** The loop thread's longest time on a CPU within one interval (null where not reported). */
  busy: number | null;
  durationMs: number;
  result: T;
}

/**
 * Watches the event loop while `work` runs. Run-queue waits are the machine's load (other test
 * processes on a 2-CPU runner), not a stall of ours, and are taken out; a loop blocked by our
 * own code is running or sleeping in a system call, and counts in full.
 */
async function watchLoop<T>(work: () => Promise<T>): Promise<LoopWatch<T>> {
  let lag = 0;
  let busy: number | null = null;
  const start = performance.now();
  let expected = start + 5;
  let last = loopThreadTimes();
  const timer = setInterval(() => {
    const now = performance.now();
    const times = loopThreadTimes();
    const preempted = last && times ? times.waiting - last.waiting : 0;
    lag = Math.max(lag, now - expected - preempted);
    if (last && times) busy = Math.max(busy ?? 0, times.cpu - last.cpu);
    expected = now + 5;
    last = times;
  }, 5);
  try {
    const result = await work();
    return { lag, busy, durationMs: performance.now() - start, result };
  } finally {
    clearInterval(timer);
  }
}

function bash(command: string): ToolCall {
  return {
    principal: { name: "bob", trust: "inner" },
    situation: { channel: "http", ceiling: null, contributors: [] },
    tool: "bash",
    args: { command },
  };
}

Deno.test({
  name: "§4.5 R12: 800,000 directories in a workspace stall no one, and the call fails closed",
  ignore: !SANDBOX_TESTS,
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-r12-" }));
    const shm = await Deno.makeTempDir({ dir: "/dev/shm", prefix: "coop-r12-" });
    await Deno.chmod(base, 0o755);
    await Deno.chmod(shm, 0o755);
    const ws = join(shm, "bob");
    try {
      const text = `[agent]\nworkspace = "${shm}"\n` +
        '[[users]]\nname = "alice"\ntrust = "owner"\n[[users]]\nname = "bob"\ntrust = "inner"\n';
      const executor = new ToolExecutor(parseConfig(text, join(base, "coop.toml"), base));
      // Warm up: the escape self-test and the scan workers start once, before the attack.
      const first = await executor.call(bash("echo warm"));
      strictEqual(first.content, "warm\n[exit code 0]");

      const made = performance.now();
      for (let i = 0; i < DIRECTORIES; i++) Deno.mkdirSync(join(ws, `d${i}`));
      const makeMs = performance.now() - made;

      // The control: the same watch with nothing of ours running, for 2 s just before the call
      // and at least 2 s just after it (a drift of the load shows in one of them), so the bound
      // below moves with what this
      // machine's load alone does to a timer (on a quiet runner a few ms; a VM whose CPUs are
      // overcommitted oversleeps epoll_wait by tens of ms).
      const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
      const before = await watchLoop(() => sleep(2000));
      const { lag, busy, durationMs, result } = await watchLoop(() =>
        executor.call(bash("echo ran"))
      );
      const after = await watchLoop(() => sleep(Math.max(2000, durationMs / 2)));
      const idle = { lag: Math.max(before.lag, after.lag) };
      ok(result.isError, result.content);
      ok(!result.content.includes("ran\n"), "the command did not run");
      ok(
        /the workspace .* has more than 100000 entries at its top, too many to verify .* so nothing was run; move files into subdirectories or delete some, or raise sandbox\.workspace_scan_limit/
          .test(result.content),
        result.content,
      );
      ok(result.workspaceUnverified?.[0].includes("more than 100000 entries"), "the owner is told");
      const measured =
        `longest timer delay during the call ${lag.toFixed(1)} ms (${
          durationMs.toFixed(0)
        } ms long, loop thread at most ${
          busy?.toFixed(1)
        } ms on a CPU between two ticks), with nothing ` +
        `running (before and after) ${idle.lag.toFixed(1)} ms`;
      // Listing 800,000 directories on the loop would keep its thread busy for seconds at once.
      if (busy !== null) ok(busy < MAX_LAG_MS, `the event loop's thread was busy: ${measured}`);
      // Lateness also catches a loop blocked in a system call, but says something only where
      // the machine's own load leaves a timer nearly on time — the control tells. On a runner
      // overloaded by other work (load 20 on 2 CPUs here) the loop's CPU time above decides.
      if (busy === null || idle.lag < QUIET_LAG_MS) {
        ok(lag < MAX_LAG_MS + idle.lag, `the event loop was late: ${measured}`);
      } else {
        console.log(
          `R12: lateness not judged: the machine alone makes the timer ${
            idle.lag.toFixed(1)
          } ms late (quiet is < ${QUIET_LAG_MS} ms); judged by the loop thread's CPU time`,
        );
      }
      console.log(
        `R12: made ${DIRECTORIES} directories in ${(makeMs / 1000).toFixed(1)} s; ${measured}`,
      );
    } finally {
      await Deno.remove(shm, { recursive: true });
      await Deno.remove(base, { recursive: true });
    }
  },
});
