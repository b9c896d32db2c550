/**
 * The cost of an environment's root (issue 14): `exec(["sh","-c","true"])` p50 with an overlay
 * root — over the host's /usr, and over a base directory (the mini rootfs) — vs the plain
 * sandbox, in interleaved rounds of the same process so that all three share the noise. Each
 * variant keeps one upper across its runs, as a user's does, so its commands after the first
 * clone the overlay the first one mounted (src/sandbox/held_overlay.ts), as a user's commands
 * within `IDLE_MS` of each other do; the last variant mounts its own for every command, as the
 * first command after an idle time (or on a kernel before 6.15) does. Run by `deno task bench`
 * (scripts/bench.ts); informational, never fails.
 * @module
 */
import { parseArgs } from "node:util";
import { environmentWritesSettled, exec, type SandboxPolicyInput } from "../src/sandbox/mod.ts";
import { workdirRemovalsSettled } from "../src/sandbox/overlay_workdir.ts";
import { upperSyncsSettled } from "../src/sandbox/upper_sync.ts";
import { dropHeldOverlays } from "../src/sandbox/held_overlay.ts";
import { testEnvironment } from "../tests/sandbox/environment_fixture.ts";

/** `--rounds N --runs N` change them (interleaved A/B runs of two checkouts use shorter ones). */
const { values: flags } = parseArgs({
  args: Deno.args,
  options: { rounds: { type: "string" }, runs: { type: "string" } },
});
const ROUNDS = Math.max(1, Number(flags.rounds ?? 5) || 5);
const RUNS_PER_ROUND = Math.max(1, Number(flags.runs ?? 40) || 40);
const GOAL_RATIO = 1.3;
const FRESH = "directory lower, a new mount each";

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
      [FRESH, { workspace, rootfs: env.rootfs("bench-fresh") }],
    ];
    const samples = new Map(variants.map(([name]) => [name, [] as number[]]));
    // Holding stays off for the fresh variant's runs (which drops the others' held overlays
    // too: their next round starts with a mount of its own).
    const holding = (name: string, on: boolean) => {
      if (name === FRESH) dropHeldOverlays(on);
    };
    for (const [name, policy] of variants) {
      holding(name, false);
      for (let i = 0; i < 5; i++) await exec(policy, ["sh", "-c", "true"]); // warm-up
      holding(name, true);
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, policy] of variants) {
        holding(name, false);
        for (let i = 0; i < RUNS_PER_ROUND; i++) {
          const t = performance.now();
          const r = await exec(policy, ["sh", "-c", "true"]);
          samples.get(name)!.push(performance.now() - t);
          if (r.exitCode !== 0) throw new Error(`${name}: exit ${r.exitCode}: ${r.stderr}`);
        }
        holding(name, true);
        // Removals wait for an idle moment (src/sandbox/overlay_workdir.ts): without this they
        // would run in the next variant's round and slow the plain sandbox, not the overlay.
        // (Held overlays stay held: `environmentWritesSettled` would drop them.)
        await workdirRemovalsSettled();
        await upperSyncsSettled();
      }
    }
    const plain = p50(samples.get("plain")!);
    const parts = variants.slice(1).map(([name]) => {
      const ratio = p50(samples.get(name)!) / plain;
      if (name === FRESH) {
        return `${name} ${p50(samples.get(name)!).toFixed(2)} ms (${ratio.toFixed(2)}×: a ` +
          "user's first command after an idle time)";
      }
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
