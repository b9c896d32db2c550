/**
 * The cost of the second wall (Landlock + seccomp): `exec(["sh","-c","true"])` p50 with the
 * release library vs a debug build without both layers. A library is loaded once per
 * process, so each side runs in its own child process; rounds alternate to share the noise.
 * Run by `deno task bench` (scripts/bench.ts); informational, never fails.
 * @module
 */
import { fileURLToPath } from "node:url";
import { buildDebugLibrary } from "./debug_library.ts";

const ROUNDS = 4;
const RUNS_PER_ROUND = 100;
const GOAL_MS = 1;

/** In a child: prints the p50 (ms) of RUNS_PER_ROUND sequential execs. */
async function child(): Promise<void> {
  const { exec } = await import("../src/sandbox/mod.ts");
  const workspace = await Deno.makeTempDir({ prefix: "coop-bench-hardening-" });
  const samples: number[] = [];
  for (let i = 0; i < RUNS_PER_ROUND + 10; i++) {
    const t = performance.now();
    await exec({ workspace }, ["sh", "-c", "true"]);
    if (i >= 10) samples.push(performance.now() - t);
  }
  await Deno.remove(workspace, { recursive: true });
  samples.sort((a, b) => a - b);
  console.log(samples[Math.floor(samples.length / 2)].toFixed(3));
}

async function round(env: Record<string, string>): Promise<number> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", fileURLToPath(new URL(import.meta.url)), "--child"],
    env,
  }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return Number(new TextDecoder().decode(out.stdout).trim());
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main(): Promise<void> {
  const debug = await buildDebugLibrary(["landlock", "seccomp"]);
  if (!debug.ok) {
    console.log(`hardening cost: skipped — the debug build failed: ${debug.output}`);
    return;
  }
  const weakened = debug.env;
  const hardened: number[] = [], bare: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    hardened.push(await round({}));
    bare.push(await round(weakened));
  }
  const cost = median(hardened) - median(bare);
  console.log(
    `hardening cost (Landlock + seccomp), ${ROUNDS}×${RUNS_PER_ROUND} execs each: ` +
      `p50 ${median(hardened).toFixed(2)} ms with, ${median(bare).toFixed(2)} ms without → ` +
      `${cost >= 0 ? "+" : ""}${cost.toFixed(2)} ms (goal ≤ ${GOAL_MS} ms: ${
        cost <= GOAL_MS ? "met" : "NOT met"
      })`,
  );
}

if (import.meta.main) {
  if (Deno.args.includes("--child")) await child();
  else await main();
}
