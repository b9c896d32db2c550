/**
 * The cost of an environment's root (issue 14): `exec(["sh","-c","true"])` p50 with an overlay
 * root — over the host's /usr, and over a base directory (the mini rootfs) — vs the plain
 * sandbox, in interleaved rounds of the same process so that all three share the noise. Each
 * variant keeps one upper across its runs, as a user's does. Run by `deno task bench`
 * (scripts/bench.ts); informational, never fails.
 * @module
 */
import { parseArgs } from "node:util";
import { environmentWritesSettled, exec, type SandboxPolicyInput } from "../src/sandbox/mod.ts";
import { testEnvironment } from "../tests/sandbox/environment_fixture.ts";

/** `--rounds N --runs N` change them (interleaved A/B runs of two checkouts use shorter ones). */
const { values: flags } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string" }, runs: { type: "string" } },
});
const ROUNDS = Math.max(1, Number(flags.rounds ?? 5) || 5);
const RUNS_PER_ROUND = Math.max(1, Number(flags.runs ?? 40) || 40);
const GOAL_RATIO = 1.3;

function p50(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)];
}

async function main(): Promise<void> {
  const env = await testEnvironment();
  const workspace = await Deno.makeTempDir({ prefix: "coop-bench-env-" });
  try {
    const variants: [string, SandboxPolicyInput][] = [
      ["plain", { workspace }],
      ["host lower", { workspace, rootfs: env.rootfs("bench-host", "host") }],
      ["directory lower", { workspace, rootfs: env.rootfs("bench-dir") }],
    ];
    const samples = new Map(variants.map(([name]) => [name, [] as number[]]));
    for (const [, policy] of variants) {
      for (let i = 0; i < 5; i++) await exec(policy, ["sh", "-c", "true"]); // warm-up
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, policy] of variants) {
        for (let i = 0; i < RUNS_PER_ROUND; i++) {
          const t = performance.now();
          const r = await exec(policy, ["sh", "-c", "true"]);
          samples.get(name)!.push(performance.now() - t);
          if (r.exitCode !== 0) throw new Error(`${name}: exit ${r.exitCode}: ${r.stderr}`);
        }
        // Removals wait for an idle moment (src/sandbox/overlay_workdir.ts): without this they
        // would run in the next variant's round and slow the plain sandbox, not the overlay.
        await environmentWritesSettled();
      }
    }
    const plain = p50(samples.get("plain")!);
    const parts = variants.slice(1).map(([name]) => {
      const ratio = p50(samples.get(name)!) / plain;
      return `${name} ${p50(samples.get(name)!).toFixed(2)} ms (${ratio.toFixed(2)}×, goal ≤ ` +
        `${GOAL_RATIO}×: ${ratio <= GOAL_RATIO ? "met" : "missed"})`;
    });
    console.log(
      `environment root, ${ROUNDS}×${RUNS_PER_ROUND} execs each, interleaved: p50 plain ` +
        `${plain.toFixed(2)} ms; ${parts.join("; ")}`,
    );
  } finally {
    // What the sandboxes left to do after their results (removals, syncs) ends here, not
    // during the next run's measurements (session 13's runs worsened one after another).
    await environmentWritesSettled();
    await env.dispose();
    await Deno.remove(workspace, { recursive: true });
  }
}

if (import.meta.main) await main();
