// exec() latency of `sh -c true` on whichever runtime runs this file: Deno (in this checkout,
// where deno.json maps "coop-sandbox" to mod.ts) or Node (copied beside an installed
// coop-sandbox package). Prints one JSON line: runtime, p50 and p95 in ms. Used by
// scripts/bench_node.ts, which runs it on both in the same run.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { exec } from "coop-sandbox";

const runs = Number(process.argv[2] ?? 200), warmup = 20;
const workspace = mkdtempSync(join(tmpdir(), "coop-bench-runtime-"));
const once = async () => {
  const started = performance.now();
  const r = await exec({ workspace }, ["sh", "-c", "true"]);
  if (r.exitCode !== 0) throw new Error(`exec failed: ${r.exitCode} ${r.stderr}`);
  return performance.now() - started;
};
try {
  for (let i = 0; i < warmup; i++) await once();
  const samples = [];
  for (let i = 0; i < runs; i++) samples.push(await once());
  samples.sort((a, b) => a - b);
  const at = (p) =>
    samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)];
  const runtime = "Deno" in globalThis ? "deno" : "node";
  console.log(JSON.stringify({ runtime, p50: at(50), p95: at(95), runs }));
} finally {
  rmSync(workspace, { recursive: true, force: true });
}
