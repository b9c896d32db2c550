/**
 * `deno task bench`: the latency of starting `sh -c true`, unsandboxed, through `exec()`
 * (sequential and 20 at a time) and through bubblewrap when it is installed.
 *
 * Informational only: a missed goal is marked in the output, never turned into a failing
 * exit status, so the bench can run anywhere (CI, a laptop, as root or not).
 * @module
 */
import { fileURLToPath } from "node:url";
import { exec } from "../src/sandbox/mod.ts";
import { hostLayout } from "../src/sandbox/host_layout.ts";

const RUNS = 200;
const WARMUP = 20;
const CONCURRENCY = 20;
const COMMAND = ["sh", "-c", "true"];

/** Goals from issue 2 (for `exec()` p50). */
const GOAL_P50_MS = 6;
const GOAL_VS_COMMAND = 3.5;
const GOAL_VS_BWRAP = 0.6;
/** Goal from issue 4: what memory + pids limits may add to `exec()` p50. */
const GOAL_LIMITS_COST_MS = 1;

/** One measured variant: per-run latencies and the wall time of the whole series. */
interface Series {
  name: string;
  samples: number[];
  wallMs: number;
}

/** Nearest-rank percentile (p in 0..100) of unsorted samples. */
function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

async function timed(run: () => Promise<void>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

/** Runs `run` `count` times, `concurrency` at a time, and records each run's latency. */
async function measure(
  name: string,
  run: () => Promise<void>,
  concurrency = 1,
): Promise<Series> {
  // Warm up with the same concurrency: first calls pay for module loading, dlopen, the init
  // memfd and the page cache, none of which a long-running gateway pays per command.
  await pool(WARMUP, concurrency, run);
  const samples: number[] = [];
  const wallMs = await timed(() =>
    pool(RUNS, concurrency, async () => {
      samples.push(await timed(run));
    })
  );
  return { name, samples, wallMs };
}

/** A fixed-size worker pool (not batches), so a slow run does not idle the other workers. */
async function pool(count: number, concurrency: number, run: () => Promise<void>) {
  let next = 0;
  const worker = async () => {
    while (next++ < count) await run();
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, count) }, worker));
}

async function runChecked(command: string, args: string[]): Promise<void> {
  const { code, stderr } = await new Deno.Command(command, { args }).output();
  if (code !== 0) {
    throw new Error(`${command} exited ${code}: ${new TextDecoder().decode(stderr).trim()}`);
  }
}

/** The limits of the "limits on" series: memory and pids (cgroup v1 as root, else rlimits). */
const LIMITS = { memoryBytes: 256 * 2 ** 20, pidsLimit: 64 };

async function execChecked(workspace: string, limits = {}): Promise<void> {
  const result = await exec({ workspace, ...limits }, COMMAND);
  if (result.exitCode !== 0) throw new Error(`exec exited ${result.exitCode}: ${result.stderr}`);
}

/**
 * bubblewrap arguments for the closest policy to `exec()`'s default one: every namespace,
 * the same read-only host layout (taken from the sandbox's own host_layout.ts), workspace at
 * /work as cwd, fresh /tmp /dev /proc, new session, cleared environment, no capabilities.
 * Not reproduced: the six synthesized /etc files (bwrap's --file needs extra inherited fds)
 * and the tmpfs size limit (--size needs bubblewrap ≥ 0.10).
 */
function bwrapArgs(workspace: string): string[] {
  const args = ["--unshare-all", "--die-with-parent", "--new-session", "--hostname", "coop"];
  for (const entry of hostLayout()) {
    if (entry.kind === "bind") args.push("--ro-bind", entry.host, entry.inside);
    else args.push("--symlink", entry.target, entry.inside);
  }
  args.push(
    ...["--bind", workspace, "/work", "--chdir", "/work"],
    ...["--tmpfs", "/tmp", "--dev", "/dev", "--proc", "/proc"],
    ...["--clearenv", "--setenv", "PATH", "/usr/local/bin:/usr/bin:/bin"],
    ...["--setenv", "HOME", "/work", "--cap-drop", "ALL"],
  );
  return [...args, ...COMMAND];
}

/** Why bubblewrap cannot be measured here, or null when it can. */
async function bwrapUnavailable(workspace: string): Promise<string | null> {
  try {
    await runChecked("bwrap", bwrapArgs(workspace));
    return null;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return "bwrap is not installed (not on PATH)";
    return `bwrap is installed but cannot run here: ${(error as Error).message}`;
  }
}

/** Open fds and OS threads of this process, to spot a leak across hundreds of sandboxes. */
function resources(): { fds: number; threads: number } {
  const fds = [...Deno.readDirSync("/proc/self/fd")].length;
  const status = Deno.readTextFileSync("/proc/self/status");
  const threads = Number(/^Threads:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
  return { fds, threads };
}

function environmentLine(): string {
  const cpus = navigator.hardwareConcurrency;
  return `deno ${Deno.version.deno}, kernel ${Deno.osRelease()}, ${cpus} CPUs, ` +
    `uid ${Deno.uid()}, ${new Date().toISOString()}`;
}

const ms = (value: number) => value.toFixed(2).padStart(8);

function printTable(series: Series[]): void {
  console.log(
    `${"variant".padEnd(34)}${"p50 ms".padStart(8)}${"p95 ms".padStart(8)}` +
      `${"max ms".padStart(8)}${"runs/s".padStart(8)}`,
  );
  for (const s of series) {
    const perSecond = (s.samples.length / (s.wallMs / 1000)).toFixed(0).padStart(8);
    console.log(
      `${s.name.padEnd(34)}${ms(percentile(s.samples, 50))}${ms(percentile(s.samples, 95))}` +
        `${ms(Math.max(...s.samples))}${perSecond}`,
    );
  }
}

function goalLine(label: string, value: number, goal: number, unit: string): string {
  const mark = value <= goal ? "✓ met" : "✗ not met";
  return `${label.padEnd(34)}${
    value.toFixed(2).padStart(8)
  }${unit}  goal ≤ ${goal}${unit}  ${mark}`;
}

function printGoals(command: Series, execSeq: Series, bwrap: Series | null): void {
  const execP50 = percentile(execSeq.samples, 50);
  console.log(goalLine("exec() p50", execP50, GOAL_P50_MS, " ms"));
  const vsCommand = execP50 / percentile(command.samples, 50);
  console.log(goalLine("exec() p50 / Deno.Command p50", vsCommand, GOAL_VS_COMMAND, "×"));
  if (bwrap) {
    const vsBwrap = execP50 / percentile(bwrap.samples, 50);
    console.log(goalLine("exec() p50 / bwrap p50", vsBwrap, GOAL_VS_BWRAP, "×"));
  } else {
    console.log(`${"exec() p50 / bwrap p50".padEnd(34)}     n/a   (bwrap skipped)`);
  }
}

async function main(): Promise<void> {
  console.log(`coop sandbox bench: \`${COMMAND.join(" ")}\`, ${RUNS} runs after ${WARMUP} warm-up`);
  console.log(environmentLine());
  const workspace = await Deno.makeTempDir({ prefix: "coop-bench-" });
  try {
    const bwrapSkip = await bwrapUnavailable(workspace);
    // The first exec() keeps a few things for the life of the process (the init's memfd, the
    // SIGCHLD listener's fds and thread): take the snapshot after it so that the leak line
    // shows only what hundreds more sandboxes add, which should be nothing.
    await execChecked(workspace);
    const before = resources();
    const series: Series[] = [];
    const command = await measure(
      "Deno.Command (no sandbox)",
      () => runChecked(COMMAND[0], COMMAND.slice(1)),
    );
    series.push(command);
    const execSeq = await measure("exec() sequential", () => execChecked(workspace));
    series.push(execSeq);
    const execLimits = await measure(
      "exec() sequential, limits on",
      () => execChecked(workspace, LIMITS),
    );
    series.push(execLimits);
    series.push(
      await measure(`exec() ${CONCURRENCY} at a time`, () => execChecked(workspace), CONCURRENCY),
    );
    let bwrap: Series | null = null;
    if (bwrapSkip === null) {
      bwrap = await measure(
        "bwrap (equivalent policy)",
        () => runChecked("bwrap", bwrapArgs(workspace)),
      );
      series.push(bwrap);
    }
    const after = resources();
    console.log();
    printTable(series);
    if (bwrapSkip !== null) console.log(`bwrap: skipped — ${bwrapSkip}`);
    console.log();
    printGoals(command, execSeq, bwrap);
    const limitsCost = percentile(execLimits.samples, 50) - percentile(execSeq.samples, 50);
    console.log(goalLine("limits on − off, p50", limitsCost, GOAL_LIMITS_COST_MS, " ms"));
    console.log();
    console.log(
      `leak check (after the first exec → end): fds ${before.fds} → ${after.fds}, ` +
        `threads ${before.threads} → ${after.threads}`,
    );
  } finally {
    await Deno.remove(workspace, { recursive: true });
  }
}

/**
 * The comparisons that run in a process of their own after the library's (one sandbox library
 * per process, see bench_hardening.ts): script, and what its failure line says.
 */
const SEPARATE_BENCHES: ReadonlyArray<[string, string]> = [
  ["bench_hardening.ts", "hardening cost"],
  ["bench_proxy.ts", "proxy cost"],
  ["bench_gateway.ts", "gateway overhead"],
  ["bench_leaks.ts", "leak scan"],
  ["bench_limits.ts", "limits cost"],
  ["bench_node.ts", "exec() under Node"],
  ["bench_channels.ts", "channel overhead"],
  ["bench_load.ts", "gateway under load"],
  ["bench_environment.ts", "environment root"],
  ["bench_session.ts", "live session sandboxes"],
];

if (import.meta.main) {
  await main();
  for (const [script, name] of SEPARATE_BENCHES) {
    console.log();
    const run = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        "--quiet",
        fileURLToPath(new URL(`./${script}`, import.meta.url)),
      ],
      stdout: "inherit",
      stderr: "inherit",
    }).output();
    if (!run.success) console.log(`${name}: the comparison failed (see above)`);
  }
}
