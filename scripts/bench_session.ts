/**
 * `deno task bench`, live session sandboxes (issue 14): a command inside a live session sandbox
 * vs the same command through `Deno.Command` without a sandbox (p50 ratio, goal ≤ 1.5×; runs
 * alternate, so a shared machine's load falls on both alike), and a session's start — from
 * `startSession()` (the spec) until its first command has run — p50 and p99 (goals ≤ 5 ms p50,
 * < 100 ms p99). The start is measured to the first command's exit, an upper bound of "to its
 * first instruction"; `startSession()` alone (to the init's READY) is printed beside it.
 * @module
 */
import { startSession } from "../src/sandbox/mod.ts";

const RUNS = 300;
const WARMUP = 30;
const STARTS = 100;
const COMMAND = ["true"];

function quantile(samples: number[], q: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * q) - 1)];
}

async function unsandboxed(): Promise<number> {
  const start = performance.now();
  const r = await new Deno.Command(COMMAND[0], { args: COMMAND.slice(1), stdin: "null" })
    .output();
  if (!r.success) throw new Error("true failed unsandboxed");
  return performance.now() - start;
}

const workspace = await Deno.makeTempDir({ prefix: "coop-bench-session-" });
try {
  const policy = { workspace, network: "none" as const };
  const session = await startSession(policy);
  const inSession = async () => {
    const start = performance.now();
    const r = await session.exec(COMMAND);
    if (r.exitCode !== 0) throw new Error(`exited ${r.exitCode}: ${r.stderr}`);
    return performance.now() - start;
  };
  for (let i = 0; i < WARMUP; i++) await unsandboxed(), await inSession();
  const plain: number[] = [], live: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    plain.push(await unsandboxed());
    live.push(await inSession());
  }
  await session.stop();
  const ratio = quantile(live, 0.5) / quantile(plain, 0.5);
  console.log(
    `session command vs Deno.Command (p50)            unsandboxed ${
      quantile(plain, 0.5).toFixed(2)
    } ms, in session ${quantile(live, 0.5).toFixed(2)} ms, ratio ${ratio.toFixed(2)}× ${
      ratio <= 1.5 ? "✓" : "✗ (goal ≤ 1.5×)"
    }`,
  );

  const ready: number[] = [], first: number[] = [];
  for (let i = 0; i < STARTS + 5; i++) {
    const start = performance.now();
    const s = await startSession(policy);
    const up = performance.now();
    const r = await s.exec(COMMAND);
    const done = performance.now();
    if (r.exitCode !== 0) throw new Error(`first command exited ${r.exitCode}`);
    await s.stop();
    if (i < 5) continue; // warm-up
    ready.push(up - start);
    first.push(done - start);
  }
  const p50 = quantile(first, 0.5), p99 = quantile(first, 0.99);
  console.log(
    `session start to first command (p50 / p99)       ${p50.toFixed(2)} / ${p99.toFixed(2)} ms ${
      p50 <= 5 && p99 < 100 ? "✓" : "✗ (goal p50 ≤ 5 ms, p99 < 100 ms)"
    }` +
      `  (startSession alone ${quantile(ready, 0.5).toFixed(2)} / ${
        quantile(ready, 0.99).toFixed(2)
      } ms)`,
  );
} finally {
  await Deno.remove(workspace, { recursive: true });
}
