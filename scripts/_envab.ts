import process from "node:process";
const root = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const { environmentWritesSettled, exec } = await import(`${root}/src/sandbox/mod.ts`);
const { testEnvironment } = await import(`${root}/tests/sandbox/environment_fixture.ts`);
const env = await testEnvironment();
const workspace = await Deno.makeTempDir({ prefix: "coop-bench-env-" });
const variants: [string, unknown][] = [
  ["plain", { workspace }],
  ["host", { workspace, rootfs: env.rootfs("bench-host", "host") }],
  ["dir", { workspace, rootfs: env.rootfs("bench-dir") }],
];
for (const [, p] of variants) for (let i = 0; i < 10; i++) await exec(p, ["sh", "-c", "true"]);
const res: Record<string, number[]> = { plain: [], host: [], dir: [] };
for (let round = 0; round < 4; round++) {
  for (const [name, p] of variants) {
    for (let i = 0; i < 40; i++) { const t = performance.now(); const r = await exec(p, ["sh", "-c", "true"]); res[name].push(performance.now() - t); if (r.exitCode !== 0) throw new Error(r.stderr); }
    await environmentWritesSettled();
  }
}
const p50 = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(root.padEnd(16), "plain", p50(res.plain).toFixed(2), "host", p50(res.host).toFixed(2), (p50(res.host)/p50(res.plain)).toFixed(2)+"×", "dir", p50(res.dir).toFixed(2), (p50(res.dir)/p50(res.plain)).toFixed(2)+"×");
await env.dispose();
Deno.exit(0);
