/**
 * The gateway under load (issue 17): N clients (20 by default) over the HTTP channel of a real
 * `coop start` process, each turn one sandboxed `bash` call through a model on loopback that
 * answers at once — against, in the same run, the raw N-at-a-time `exec()` throughput of the same
 * policy, so the figure that matters is the ratio. Prints turns per second, turn latency
 * percentiles, failures, and the gateway's RSS (before, peak, after), descriptors and threads.
 * `--turns N` sets the measured turns (default 1,000); with `--curve` it prints RSS every 1,000
 * turns (`--curve-every N`; the long run: `deno run -A scripts/bench_load.ts --turns 10000 --curve`).
 * A/B comparisons in one invocation: `--variant "label|checkout|deno flags|ENV=value …"`
 * (repeatable; an empty checkout is this one; the environment is added to the gateway's) and
 * `--rounds N` run each variant in turn, N times, interleaved. Without `--variant` the gateway runs
 * with the launcher's settings (`scripts/runtime.env`); in a variant, `@runtime` as the environment
 * stands for them. `--settle` also prints the RSS 5 s
 * and 30 s after the load stops (what the gateway gives back when idle).
 * Informational: a missed goal is marked, never fails.
 * @module
 */
import { parseArgs } from "node:util";
import { join } from "node:path";
import { parseConfig } from "../src/config/config.ts";
import { toSandboxPolicy } from "../src/config/sandbox_settings.ts";
import { Gateway } from "../src/gateway/gateway.ts";
import { scopeFor } from "../src/tools/path_scope.ts";
import { exec, type SandboxPolicyInput } from "../src/sandbox/mod.ts";
import { ANTHROPIC } from "../tests/agent/wire_formats.ts";
import { readRuntimeEnv } from "./runtime_env.ts";
import type { ScriptedReply } from "../tests/agent/scripted_server.ts";
import {
  type GatewayProcessOptions,
  makeCoopHome,
  postMessage,
  startGateway,
  stopGateway,
} from "../tests/e2e/gateway_process.ts";

const COMMAND = "true";
const FINAL_TEXT = "done";
const WARMUP_TURNS = 100;
const RAW_SECONDS = 5;
/** Issue 17's goal: turns per second ≥ this share of the raw exec() throughput. */
const GOAL_RATIO = 0.5;

/** Nearest-rank percentile (p in 0..100) of unsorted samples, as in bench.ts. */
function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** The Messages API on loopback: the first request of a turn gets a `bash` call, the next the reply. */
function startProvider(): Deno.HttpServer<Deno.NetAddr> {
  const body = (reply: ScriptedReply) => (reply.chunks ?? []).join("");
  const call = body(ANTHROPIC.toolCall("toolu_1", "bash", [JSON.stringify({ command: COMMAND })]));
  const final = body(ANTHROPIC.text([FINAL_TEXT]));
  const headers = { "content-type": "text/event-stream" };
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const { messages } = await request.json() as { messages: unknown[] };
    return new Response(messages.length === 1 ? call : final, { headers });
  });
}

function configText(clients: number, providerUrl: string): string {
  const users = Array.from({ length: clients }, (_, i) => `
[[users]]
name = "u${i}"
trust = "full"
match = ["http:u${i}"]`).join("\n");
  const tokens = Array.from(
    { length: clients },
    (_, i) => `[[channels.http.tokens]]\nid = "u${i}"\ntoken_env = "U${i}_TOKEN"`,
  ).join("\n");
  return `
[agent]
model = "bench/m"
workspace = "{{dir}}/workspace"
state_dir = "{{dir}}/state"
${users}
[[providers]]
name = "bench"
kind = "anthropic"
base_url = "${providerUrl}"
[channels.http]
enabled = true
listen = "127.0.0.1:0"
max_connections = ${Math.max(256, clients * 4)}
${tokens}
`;
}

/** What /proc says about the gateway process now. */
interface ProcessSample {
  rssMb: number;
  threads: number;
  fds: number;
  /** CPU seconds the process has used (user + system, all its threads). */
  cpuSeconds: number;
}

function sample(pid: number): ProcessSample {
  const status = Deno.readTextFileSync(`/proc/${pid}/status`);
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, "m").exec(status)?.[1]);
  let fds = 0;
  for (const _ of Deno.readDirSync(`/proc/${pid}/fd`)) fds++;
  // utime and stime, in clock ticks (USER_HZ, 100 on Linux), after the command name's ")".
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  const [utime, stime] = stat.slice(stat.lastIndexOf(")") + 2).split(" ").slice(11, 13).map(Number);
  return {
    rssMb: field("VmRSS") / 1024,
    threads: field("Threads"),
    fds,
    cpuSeconds: (utime + stime) / 100,
  };
}

/** Runs `turns` turns from `clients` concurrent clients; returns each turn's latency and failures. */
async function load(
  url: string,
  clients: number,
  turns: number,
  onTurn: (done: number) => void,
): Promise<{ latencies: number[]; failures: string[]; seconds: number }> {
  const latencies: number[] = [];
  const failures: string[] = [];
  let started = 0;
  const begin = performance.now();
  await Promise.all(Array.from({ length: clients }, async (_, i) => {
    while (started < turns) {
      started++;
      const t0 = performance.now();
      try {
        const { status, json } = await postMessage(url, `token-u${i}`, { text: "go" });
        const tools = json.tools as { sandboxed?: boolean; exitCode?: number }[] | undefined;
        // A sandbox that could not start still gives a reply: only a command that ran counts.
        const ran = tools?.[0]?.sandboxed === true && tools[0].exitCode === 0;
        if (status !== 200 || json.reply !== FINAL_TEXT || !ran) {
          failures.push(`${status} ${JSON.stringify(json).slice(0, 200)}`);
        } else {
          latencies.push(performance.now() - t0);
        }
      } catch (error) {
        failures.push(error instanceof Error ? error.message : String(error));
      }
      onTurn(latencies.length + failures.length);
    }
  }));
  return { latencies, failures, seconds: (performance.now() - begin) / 1000 };
}

/** `clients` loops of `exec()` with the policy bob's `bash` gets, for `seconds`: runs per second. */
async function rawExec(policy: SandboxPolicyInput, clients: number, seconds: number) {
  const end = performance.now() + seconds * 1000;
  let runs = 0;
  const begin = performance.now();
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < end) {
      const result = await exec(policy, ["sh", "-c", COMMAND], { timeoutMs: 30_000 });
      if (result.exitCode !== 0) throw new Error(`exec() exited ${result.exitCode}`);
      runs++;
    }
  }));
  return runs / ((performance.now() - begin) / 1000);
}

/** The policy the gateway's executor builds for user `u0` of `text`, for the raw baseline. */
async function baselinePolicy(text: string, dir: string): Promise<SandboxPolicyInput> {
  const config = parseConfig(text.replaceAll("{{dir}}", dir), join(dir, "coop.toml"), dir);
  const gateway = Gateway.open(config);
  try {
    const user = config.users[0];
    const policy = toSandboxPolicy(
      gateway.executor.settingsFor(user),
      scopeFor(config, user.name, false).hostRoot,
    );
    await Deno.mkdir(policy.workspace!, { recursive: true });
    return policy;
  } finally {
    gateway.close();
  }
}

/** One way of running the gateway: another checkout and/or other Deno flags (A/B runs). */
interface Variant {
  label: string;
  runtime?: GatewayProcessOptions["runtime"];
  env?: Record<string, string>;
}

/**
 * `--variant "label|checkout|flag flag…|NAME=value …"`: a checkout directory (empty: this one),
 * Deno flags (space-separated, e.g. `--v8-flags=--max-semi-space-size=1`) and environment
 * variables (e.g. `MALLOC_ARENA_MAX=2`) to run the gateway with.
 */
function parseVariant(text: string): Variant {
  const [label, checkout = "", flags = "", vars = ""] = text.split("|");
  const denoFlags = flags.split(" ").filter((f) => f !== "");
  const env = vars.trim() === "@runtime" ? readRuntimeEnv() : Object.fromEntries(
    vars.split(" ").filter((v) => v.includes("=")).map((
      v,
    ) => [v.slice(0, v.indexOf("=")), v.slice(v.indexOf("=") + 1)]),
  );
  return { label, runtime: { ...(checkout ? { checkout } : {}), denoFlags }, env };
}

/** One measured run of `variant`: the load through the gateway, then the raw exec() baseline. */
async function runVariant(
  variant: Variant,
  text: string,
  clients: number,
  turns: number,
  curveEvery: number,
  settle: boolean,
): Promise<void> {
  const home = await makeCoopHome(text);
  const tokens = Object.fromEntries(
    Array.from({ length: clients }, (_, i) => [`U${i}_TOKEN`, `token-u${i}`]),
  );
  const gateway = await startGateway(home, { ...tokens, COOP_LOG: "warning", ...variant.env }, {
    ...(variant.runtime ? { runtime: variant.runtime } : {}),
  });
  try {
    const pid = gateway.child.pid;
    const idle = sample(pid);
    const warm = await load(gateway.url, clients, WARMUP_TURNS, () => {});
    if (warm.failures.length > 0) {
      throw new Error(`warm-up failed: ${warm.failures[0]}\n${gateway.stderr().slice(-3000)}`);
    }
    const before = sample(pid);
    let peak = before;
    const sampler = setInterval(() => {
      try {
        const now = sample(pid);
        if (now.rssMb > peak.rssMb) peak = now;
      } catch {
        clearInterval(sampler); // the gateway exited: the turns fail and say so
      }
    }, 100);
    const curve: string[] = [];
    const run = await load(gateway.url, clients, turns, (done) => {
      if (curveEvery > 0 && done % curveEvery === 0) {
        curve.push(`${done}: ${sample(pid).rssMb.toFixed(1)} MB`);
      }
    });
    clearInterval(sampler);
    if (run.failures.length === turns) {
      throw new Error(`every turn failed: ${run.failures[0]}\n${gateway.stderr().slice(-3000)}`);
    }
    const after = sample(pid);
    const settled: string[] = [];
    for (const seconds of settle ? [5, 30] : []) {
      await new Promise((resolve) =>
        setTimeout(resolve, (seconds - (settled.length ? 5 : 0)) * 1000)
      );
      settled.push(`${seconds} s idle ${sample(pid).rssMb.toFixed(1)}`);
    }
    await stopGateway(gateway);
    const raw = await rawExec(await baselinePolicy(text, home.dir), clients, RAW_SECONDS);

    const rate = run.latencies.length / run.seconds;
    const ratio = rate / raw;
    const p = (q: number) => percentile(run.latencies, q).toFixed(1);
    const indent = variant.label ? `  [${variant.label}]\n    ` : "  ";
    const next = variant.label ? "    " : "  ";
    console.log(
      `${indent}turns/s ${rate.toFixed(1)}  (raw exec() ${raw.toFixed(1)}/s, ratio ` +
        `${ratio.toFixed(2)}, goal ≥ ${GOAL_RATIO} ${ratio >= GOAL_RATIO ? "✓ met" : "✗ not met"})`,
    );
    console.log(
      `${next}turn latency ms p50 ${p(50)}  p95 ${p(95)}  p99 ${p(99)}  failures ` +
        `${run.failures.length}${run.failures.length ? ` (first: ${run.failures[0]})` : ""}` +
        `;  gateway CPU ms per turn ${
          ((after.cpuSeconds - before.cpuSeconds) * 1000 / turns).toFixed(2)
        }`,
    );
    console.log(
      `${next}gateway RSS MB idle ${idle.rssMb.toFixed(1)}  after warm-up ${
        before.rssMb.toFixed(1)
      }  peak ${peak.rssMb.toFixed(1)}  after ` +
        `${after.rssMb.toFixed(1)};  fds ${before.fds} → ${after.fds};  threads ` +
        `${before.threads} → ${after.threads}`,
    );
    if (settled.length > 0) console.log(`${next}RSS MB after the load: ${settled.join(", ")}`);
    if (curve.length > 0) console.log(`${next}RSS curve (turns: RSS): ${curve.join(", ")}`);
  } finally {
    await stopGateway(gateway);
    await Deno.remove(home.dir, { recursive: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      clients: { type: "string", default: "20" },
      turns: { type: "string", default: "1000" },
      curve: { type: "boolean", default: false },
      "curve-every": { type: "string", default: "1000" },
      variant: { type: "string", multiple: true, default: [] },
      rounds: { type: "string", default: "1" },
      settle: { type: "boolean", default: false },
    },
  });
  const clients = Number(values.clients), turns = Number(values.turns);
  const curveEvery = values.curve ? Number(values["curve-every"]) : 0;
  const variants = values.variant.length > 0
    ? values.variant.map(parseVariant)
    : [{ label: "", env: readRuntimeEnv() } as Variant];
  console.log(
    `gateway under load: ${clients} HTTP clients, ${turns} turns after ${WARMUP_TURNS} warm-up, ` +
      `each one model call, one sandboxed bash \`${COMMAND}\`, one reply; raw exec() baseline ` +
      `${clients} at a time for ${RAW_SECONDS} s`,
  );
  const provider = startProvider();
  try {
    const text = configText(clients, `http://127.0.0.1:${provider.addr.port}`);
    // Interleaved: A B A B …, so that the machine's other work falls on both alike.
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const variant of variants) {
        await runVariant(variant, text, clients, turns, curveEvery, values.settle);
      }
    }
  } finally {
    await provider.shutdown();
  }
}

if (import.meta.main) {
  try {
    await main();
    // The sandbox library keeps a prestarted init and its reaper's poll alive for the next exec().
    Deno.exit(0);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    console.log(`gateway under load: aborted, no figures — ${reason}`);
    Deno.exit(1);
  }
}
