/**
 * ATTACKS R12, workspace scan stall: 800,000 directories at the top of bob's workspace, then a
 * call of his through the executor. The scans before and after a call run off the event loop,
 * so the loop — standing in for everyone else's requests and `/healthz` — is never kept by our
 * code for 50 ms: its thread neither runs for 50 ms between two ticks of a 5 ms timer nor sleeps
 * 50 ms in a system call (see `watchLoop`); and the call fails closed with a message that says
 * why and what to do. The directories are made on tmpfs (/dev/shm) so that making and removing
 * them takes seconds, not minutes.
 */
import { ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { parseConfig } from "../../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../../src/tools/tool_executor.ts";
import { SANDBOX_TESTS } from "../harness.ts";
import {
  controlTicker,
  type Sample,
  startTicker,
  threadId,
  type Tick,
  TICK_MS,
} from "./loop_ticker.ts";

const DIRECTORIES = 800_000;
const MAX_LAG_MS = 50;

/** The machine's CPU time stolen by the hypervisor so far, in ms (0 where not reported). */
function stolenMs(): number {
  try {
    const cpu = Deno.readTextFileSync("/proc/stat").split("\n")[0].trim().split(/\s+/);
    return Number(cpu[8] ?? 0) * 10; // USER_HZ is 100 on Linux
  } catch {
    return 0;
  }
}

/** A stretch the loop thread slept in a system call, less what load explains of it. */
interface Blocked {
  ms: number;
  /** Where it slept (the kernel function). */
  wchan: string;
  /** How long it slept, before taking out the other threads' waits for a CPU. */
  slept: number;
}

/** The most one gap between two samples counts: the control itself may wait long for a CPU. */
const MAX_GAP_MS = 4 * TICK_MS;

/**
 * The longest run of samples that saw the loop's thread asleep outside epoll — in a system
 * call — as the time between them (each gap counted up to `MAX_GAP_MS`, so that the control's
 * own delays under load never lengthen a run much), less the longest time another thread of
 * ours waited for a CPU meanwhile: a futex the loop waits on is held by a thread that load
 * keeps waiting.
 */
function longestBlocked(samples: Sample[]): Blocked {
  let longest: Blocked = { ms: 0, wchan: "", slept: 0 };
  let first: Sample | undefined;
  let previous: Sample | undefined;
  let slept = 0;
  for (const sample of [...samples, undefined]) {
    const blocked = sample?.othersWaiting !== undefined;
    if (first && previous && !blocked) {
      const waited = Math.max(
        0,
        ...Object.entries(previous.othersWaiting!).map(([tid, ms]) =>
          ms - (first!.othersWaiting![tid] ?? ms)
        ),
      );
      if (slept - waited > longest.ms) longest = { ms: slept - waited, wchan: first.wchan, slept };
      first = undefined;
    }
    if (blocked && first) slept += Math.min(MAX_GAP_MS, sample!.at - previous!.at);
    if (blocked && !first) [first, slept] = [sample, 0];
    previous = sample;
  }
  return longest;
}

/** What the loop's ticks, and a control thread watching it, saw while `work` ran. */
interface LoopWatch<T> {
  /** The loop thread's longest time on a CPU within one interval (null where not reported). */
  busy: number | null;
  /** Its longest time blocked in a system call (null where its state cannot be read). */
  blocked: Blocked | null;
  /** The loop's longest lateness, less its waits for a CPU. */
  lag: number;
  /** The control's longest lateness, less its own waits for a CPU. */
  controlLag: number;
  /** CPU time the hypervisor stole from the machine meanwhile. */
  stolen: number;
  durationMs: number;
  result: T;
}

/**
 * Watches the event loop while `work` runs: a 5 ms timer on it, and a control thread that
 * ticks alike and samples at each tick the loop thread's state. The loop is stalled by us only
 * while its thread runs our code (its CPU time, from schedstat) or sleeps in a system call
 * other than the event loop's own epoll wait (the samples). Whatever else makes a timer late —
 * waiting for a CPU, time stolen from the VM, a wake-up the kernel is slow to deliver — is the
 * machine's load, not a stall of ours: on the 2-CPU runner at load 10–20 it reached 30–170 ms
 * beyond the run-queue waits while the thread was runnable (state R), at moments the control
 * on its own thread was on time, so lateness is reported but not judged.
 */
async function watchLoop<T>(work: () => Promise<T>): Promise<LoopWatch<T>> {
  const tid = threadId();
  const stopControl = await controlTicker(tid);
  const stolenBefore = stolenMs();
  const start = performance.now();
  const stop = startTicker();
  let result: T;
  let ticks: Tick[];
  try {
    result = await work();
  } finally {
    ticks = stop();
  }
  const durationMs = performance.now() - start;
  const stolen = stolenMs() - stolenBefore;
  const { ticks: control, samples } = await stopControl();
  const cpus = ticks.map((t) => t.cpu).filter((c) => c !== null);
  return {
    busy: cpus.length ? Math.max(...cpus) : null,
    blocked: tid !== null && samples.length > 0 ? longestBlocked(samples) : null,
    lag: Math.max(0, ...ticks.map((t) => t.late)),
    controlLag: Math.max(0, ...control.map((t) => t.late)),
    stolen,
    durationMs,
    result,
  };
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

      const watched = await watchLoop(() => executor.call(bash("echo ran")));
      const { busy, blocked, lag, controlLag, stolen, durationMs, result } = watched;
      ok(result.isError, result.content);
      ok(!result.content.includes("ran\n"), "the command did not run");
      ok(
        /the workspace .* has more than 100000 entries at its top, too many to verify .* so nothing was run; move files into subdirectories or delete some, or raise sandbox\.workspace_scan_limit/
          .test(result.content),
        result.content,
      );
      ok(result.workspaceUnverified?.[0].includes("more than 100000 entries"), "the owner is told");
      const measured = `during the ${(durationMs / 1000).toFixed(1)} s call the loop thread was ` +
        `at most ${busy?.toFixed(1)} ms on a CPU between two ticks and at most ${
          blocked
            ? `${blocked.ms.toFixed(1)} ms blocked in a system call (${blocked.wchan}, ${
              blocked.slept.toFixed(1)
            } ms less other threads' waits for a CPU)`
            : "?"
        }; its timer was late by at most ${
          lag.toFixed(1)
        } ms beyond its waits for a CPU (a control thread's ${controlLag.toFixed(1)} ms; ${
          stolen.toFixed(0)
        } ms stolen from the VM meanwhile)`;
      // Listing 800,000 directories on the loop would keep its thread busy for seconds at once…
      if (busy !== null) ok(busy < MAX_LAG_MS, `the event loop's thread was busy: ${measured}`);
      // … or, on a slow file system, asleep in its system calls.
      if (blocked !== null) ok(blocked.ms < MAX_LAG_MS, `the event loop was blocked: ${measured}`);
      ok(busy !== null || blocked !== null, `nothing tells whether the loop stalled: ${measured}`);
      console.log(
        `R12: made ${DIRECTORIES} directories in ${(makeMs / 1000).toFixed(1)} s; ${measured}`,
      );
    } finally {
      await Deno.remove(shm, { recursive: true });
      await Deno.remove(base, { recursive: true });
    }
  },
});
