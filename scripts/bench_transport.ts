/**
 * Loopback round trips to a provider in another process (`bench_gateway_provider.ts`), in one
 * process, per request: `openRequest()` + `text()`, and a whole `SseProvider.stream()`. With
 * `--old <dir>` (a copy of an older `src/`, e.g. `git archive <commit> src | tar -x -C <dir>`
 * inside the worktree so its imports resolve) the old transport runs interleaved with this one,
 * batch by batch, so both see the same load. Prints p50 and p90 in µs per variant and round.
 *
 * Usage: `deno run -A scripts/bench_transport.ts [--old build/old] [--rounds 6] [--batch 300]`
 * @module
 */
import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    old: { type: "string" },
    rounds: { type: "string", default: "6" },
    batch: { type: "string", default: "300" },
  },
});
const rounds = Number(values.rounds);
const batch = Number(values.batch);

/** What a variant is timed on: one request read to its end, and one provider stream. */
interface Variant {
  name: string;
  request: () => Promise<void>;
  stream: () => Promise<void>;
}

const script = new URL("./bench_gateway_provider.ts", import.meta.url).pathname;
const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "--allow-net=127.0.0.1", script, "0", "true", "done"],
  stdin: "piped",
  stdout: "piped",
}).spawn();
const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
let first = "";
while (!first.includes("\n")) first += (await reader.read()).value ?? "";
const url = `http://127.0.0.1:${first.trim()}`;

const body = JSON.stringify({
  model: "m",
  max_tokens: 100,
  stream: true,
  messages: [{ role: "user", content: "hi" }],
});

/** A variant on the transport and provider registry under `src` (a directory URL). */
async function variant(name: string, src: URL): Promise<Variant> {
  const transport = await import(new URL("agent/http_transport.ts", src).href);
  const registry = await import(new URL("agent/provider_registry.ts", src).href);
  const provider = registry.createProvider({ name: "bench", kind: "anthropic", base_url: url });
  const request = {
    model: "m",
    system: "",
    messages: [{ role: "user", content: "hi" }],
    tools: [],
    maxTokens: 100,
  };
  return {
    name,
    request: async () => {
      const response = await transport.openRequest({
        provider: "bench",
        url: `${url}/v1/messages`,
        headers: { "content-type": "application/json" },
        body,
        timeouts: transport.DEFAULT_PROVIDER_TIMEOUTS,
      });
      await response.text();
    },
    stream: async () => {
      for await (const _ of provider.stream(request)) { /* read to the stop event */ }
    },
  };
}

const variants = [await variant("new", new URL("../src/", import.meta.url))];
if (values.old) {
  variants.unshift(
    await variant(
      "old",
      new URL(`${values.old.replace(/\/?$/, "/")}src/`, `file://${Deno.cwd()}/`),
    ),
  );
}

const percentile = (sorted: number[], p: number) => sorted[Math.floor((sorted.length - 1) * p)];

/** Runs `batch` calls of `fn`; the sorted durations in µs. */
async function time(fn: () => Promise<void>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < batch; i++) {
    const started = performance.now();
    await fn();
    out.push((performance.now() - started) * 1000);
  }
  return out.sort((a, b) => a - b);
}

// Warm-up: JIT, connections.
for (const v of variants) for (let i = 0; i < 100; i++) await v.request(), await v.stream();
const load = () => Deno.loadavg()[0].toFixed(1);
for (let round = 1; round <= rounds; round++) {
  for (const kind of ["request", "stream"] as const) {
    for (const v of variants) {
      const sorted = await time(v[kind]);
      console.log(
        `round ${round} ${kind.padEnd(7)} ${v.name}: p50 ${
          percentile(sorted, 0.5).toFixed(0)
        } µs, ` +
          `p90 ${percentile(sorted, 0.9).toFixed(0)} µs (load ${load()})`,
      );
    }
  }
}
await child.stdin.close();
await child.status;
