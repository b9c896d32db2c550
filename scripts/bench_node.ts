/**
 * exec() p50 under Node (the coop-sandbox package through koffi) against Deno (Deno.dlopen),
 * same machine, same run: packs and installs the package in a temporary directory, then runs
 * `bench_exec_runtime.mjs` on each runtime, Deno, Node, Deno, Node (alternating, so a change in
 * the machine's load falls on both), and compares the best p50 of each. Goal: within 10 %.
 * Informational, like the rest of `deno task bench`.
 * @module
 */
import { fileURLToPath } from "node:url";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const SCRIPT = `${ROOT}scripts/bench_exec_runtime.mjs`;
const GOAL_RATIO = 1.1;
const text = new TextDecoder();

async function output(cmd: string, args: string[], cwd: string): Promise<string> {
  const out = await new Deno.Command(cmd, { args, cwd, stdin: "null", stderr: "piped" }).output();
  if (!out.success) throw new Error(`${cmd} ${args.join(" ")}: ${text.decode(out.stderr)}`);
  return text.decode(out.stdout).trim();
}

const tarball = (await output("node", [`${ROOT}scripts/pack_node.mjs`], ROOT)).split("\n").pop()!;
const dir = await Deno.makeTempDir({ prefix: "coop-bench-node-" });
try {
  await Deno.writeTextFile(`${dir}/package.json`, '{ "private": true, "type": "module" }\n');
  await output("npm", ["install", "--no-audit", "--no-fund", "--loglevel=error", tarball], dir);
  await Deno.copyFile(SCRIPT, `${dir}/bench_exec_runtime.mjs`);
  const best = { deno: Infinity, node: Infinity };
  for (let round = 0; round < 2; round++) {
    for (const runtime of ["deno", "node"] as const) {
      const line = runtime === "deno"
        ? await output(Deno.execPath(), ["run", "--allow-all", "--quiet", SCRIPT], ROOT)
        : await output("node", ["bench_exec_runtime.mjs"], dir);
      const result = JSON.parse(line.split("\n").pop()!);
      best[runtime] = Math.min(best[runtime], result.p50);
    }
  }
  const ratio = best.node / best.deno;
  console.log(
    `exec() p50 under Node vs Deno: node ${best.node.toFixed(2)} ms, deno ${
      best.deno.toFixed(2)
    } ms ` +
      `→ ${ratio.toFixed(2)}× (goal ≤ ${GOAL_RATIO}×) ${ratio <= GOAL_RATIO ? "✓" : "✗ missed"}`,
  );
} finally {
  await Deno.remove(dir, { recursive: true });
}
