/**
 * ATTACKS R12, workspace scan stall: 800,000 directories at the top of bob's workspace, then a
 * call of his through the executor. The scans before and after a call run off the event loop,
 * so a timer on that loop — standing in for everyone else's requests and `/healthz` — is never
 * late by more than 50 ms beyond what the machine's load alone makes it (see `maxTimerLag`); and the call fails closed with a message that says why and what to
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

/**
 * Nanoseconds the event loop's thread has spent runnable but waiting for a CPU, from
 * `/proc/thread-self/schedstat` (read synchronously, so by that thread itself: under `deno test`
 * it is not the process's main thread); null where the kernel does not report it.
 */
function runQueueWaitNs(): number | null {
  try {
    return Number(Deno.readTextFileSync("/proc/thread-self/schedstat").split(" ")[1]);
  } catch {
    return null;
  }
}

/**
 * Largest delay of a 5 ms interval timer on this event loop while `work` runs — less, in each
 * interval, the time the kernel kept the loop's thread waiting for a CPU. That wait is the
 * machine's load (other test processes on a 2-CPU runner), not a stall of ours: a loop blocked
 * by our own code is running (or sleeping in a system call), and counts in full.
 */
async function maxTimerLag<T>(work: () => Promise<T>): Promise<{ lag: number; result: T }> {
  let lag = 0;
  let expected = performance.now() + 5;
  let waited = runQueueWaitNs();
  const timer = setInterval(() => {
    const now = performance.now();
    const waitedNow = runQueueWaitNs();
    const preempted = waited === null || waitedNow === null ? 0 : (waitedNow - waited) / 1e6;
    lag = Math.max(lag, now - expected - preempted);
    expected = now + 5;
    waited = waitedNow;
  }, 5);
  try {
    const result = await work();
    return { lag, result };
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

      // The same timer with nothing of ours running: what the machine's own load costs it.
      const idle = await maxTimerLag(() => new Promise((r) => setTimeout(r, 1000)));
      const { lag, result } = await maxTimerLag(() => executor.call(bash("echo ran")));
      ok(result.isError, result.content);
      ok(!result.content.includes("ran\n"), "the command did not run");
      ok(
        /the workspace .* has more than 100000 entries at its top, too many to verify .* so nothing was run; move files into subdirectories or delete some, or raise sandbox\.workspace_scan_limit/
          .test(result.content),
        result.content,
      );
      ok(result.workspaceUnverified?.[0].includes("more than 100000 entries"), "the owner is told");
      const measured = `longest timer delay during the call ${lag.toFixed(1)} ms, with ` +
        `nothing running ${idle.lag.toFixed(1)} ms`;
      ok(lag < MAX_LAG_MS, `the event loop was late: ${measured}`);
      console.log(
        `R12: made ${DIRECTORIES} directories in ${(makeMs / 1000).toFixed(1)} s; ${measured}`,
      );
    } finally {
      await Deno.remove(shm, { recursive: true });
      await Deno.remove(base, { recursive: true });
    }
  },
});
