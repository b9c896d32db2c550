/**
 * `deno task bench`, limits part (issue 15): what each limits path available on this host adds
 * to `exec()` p50 over no limits at all — the default limits (memory 2G, pids 512) on the path
 * this invoker gets, the cgroup v2 path's mechanics (root: a real v2 cgroup per sandbox, made,
 * joined, killed and removed; this host's v2 has no controllers, so no limit files), and the
 * workspace quotas (accounting; root: the loop image). Off and on alternate run by run, so
 * the load of a shared machine falls on both alike. Goal: ≤ 0.5 ms added p50.
 * @module
 */
import {
  exec,
  type ExecOptions,
  type SandboxPolicyInput,
  settleSandboxCgroups,
} from "../src/sandbox/mod.ts";
import type { CgroupHost } from "../src/sandbox/cgroup_host.ts";
import { parseCgroupMounts, parseProcCgroup } from "../src/sandbox/cgroup_host.ts";
import { releaseLoopQuota } from "../src/sandbox/loop_quota.ts";

const RUNS = 200;
const WARMUP = 20;
const GOAL_MS = 0.5;
const COMMAND = ["sh", "-c", "true"];

function p50(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.ceil(sorted.length / 2) - 1];
}

async function once(policy: SandboxPolicyInput, options: ExecOptions = {}): Promise<number> {
  const start = performance.now();
  const r = await exec(policy, COMMAND, options);
  if (r.exitCode !== 0) throw new Error(`exec exited ${r.exitCode}: ${r.stderr}`);
  return performance.now() - start;
}

/** Alternates off and on; prints both p50s, the difference and the path that ran. */
async function compare(
  name: string,
  off: SandboxPolicyInput,
  on: SandboxPolicyInput,
  options: ExecOptions = {},
): Promise<void> {
  for (let i = 0; i < WARMUP; i++) await once(off), await once(on, options);
  const offs: number[] = [], ons: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    offs.push(await once(off));
    ons.push(await once(on, options));
  }
  const probe = await exec(on, COMMAND, options);
  const path = probe.disk ? `quota ${probe.disk.enforcement}` : probe.limits.path;
  const added = p50(ons) - p50(offs);
  const mark = added <= GOAL_MS ? "✓" : "✗ (goal ≤ 0.5 ms)";
  console.log(
    `${name.padEnd(44)} ${path.padEnd(20)} off ${p50(offs).toFixed(2)} ms, on ${
      p50(ons).toFixed(2)
    } ms, added ${added >= 0 ? "+" : ""}${added.toFixed(2)} ms ${mark}`,
  );
}

/** A fresh v2 cgroup below this process's own, or null when it cannot make one. */
function v2Parent(): string | null {
  const mount = parseCgroupMounts(Deno.readTextFileSync("/proc/self/mountinfo"))
    .find((m) => m.fstype === "cgroup2");
  const path = parseProcCgroup(Deno.readTextFileSync("/proc/self/cgroup")).get("");
  if (!mount || path === undefined) return null;
  const dir = `${mount.point}${path === "/" ? "" : path}/coop-bench-${Deno.pid}`;
  try {
    Deno.mkdirSync(dir);
    return dir;
  } catch {
    return null;
  }
}

async function main(): Promise<void> {
  console.log(`limits on vs off, each path here (uid ${Deno.uid()}; ${RUNS} alternating pairs):`);
  const ws = await Deno.makeTempDir({ prefix: "coop-bench-limits-" });
  const quotaWs = `${ws}/quota`, loopWs = `${ws}/loop`;
  Deno.mkdirSync(quotaWs);
  Deno.mkdirSync(loopWs);
  Deno.writeTextFileSync(`${quotaWs}/.keep`, "x"); // holds a file: the accounting path
  const parent = Deno.uid() === 0 ? v2Parent() : null;
  try {
    const base = { workspace: ws };
    await compare("default limits (memory 2G, pids 512)", base, {
      ...base,
      memoryBytes: 2 * 2 ** 30,
      pidsLimit: 512,
    });
    if (parent) {
      const host: CgroupHost = {
        v2: { dir: parent, controllers: ["memory", "pids", "cpu"] },
        v2Reason: "",
        v1: { dirs: {}, unusable: {} },
      };
      await compare("cgroup v2 mechanics (no controllers here)", base, base, { cgroupHost: host });
    } else {
      console.log("cgroup v2 mechanics: skipped (no writable v2 cgroup for this invoker)");
    }
    await compare("disk quota 1G, accounting", { workspace: quotaWs }, {
      workspace: quotaWs,
      diskQuotaBytes: 2 ** 30,
    });
    if (Deno.uid() === 0) {
      await compare("disk quota 1G, loop image (root)", { workspace: ws }, {
        workspace: loopWs,
        diskQuotaBytes: 2 ** 30,
      });
    }
  } finally {
    await settleSandboxCgroups(); // the prepared and the ended sandboxes' cgroups, in `parent` too
    await releaseLoopQuota(loopWs);
    if (parent) Deno.removeSync(parent);
    await Deno.remove(ws, { recursive: true });
  }
}

if (import.meta.main) await main();
