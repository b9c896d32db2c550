/**
 * Cgroups a dead process left (`sweepDeadSandboxCgroups`, src/sandbox/cgroup_sweep.ts): a gateway
 * killed outright leaves its sandboxes' `coop-<pid>-*` cgroups, and the next `coop start` removes
 * the empty ones named for a process that is gone — never one named for a live process, one that
 * still holds a task, or a directory of another name. Root-only here: an unprivileged invoker gets
 * the rlimit path, with no cgroup to leave (docs/limits.md).
 * @module
 */
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmdirSync,
  writeFileSync,
} from "node:fs";
import { assertEquals } from "../assert.ts";
import { cgroupHost } from "../../src/sandbox/cgroup_host.ts";
import { ownV2Dir } from "./harness.ts";
import { sweepDeadSandboxCgroups } from "../../src/sandbox/mod.ts";
import { makeCoopHome, startGateway, stopGateway, until } from "../e2e/gateway_process.ts";

const host = cgroupHost();
const parents = [...new Set([...Object.values(host.v1.dirs), ...(host.v2 ? [host.v2.dir] : [])])];
const skip = Deno.uid() !== 0
  ? `uid ${Deno.uid()} gets the rlimit path: no sandbox cgroup to leave`
  : parents.length === 0
  ? "no cgroup hierarchy this process may make sandbox cgroups in"
  : null;
if (skip) console.log(`cgroup sweep tests skipped: ${skip}`);

// On this v1/v2 hybrid the gateway makes no sandbox cgroups in v2 (no controllers), but a v2-only
// host's gateway does, and the sweep's rules must hold for cgroup2's rmdir too.
const v2Dir = ownV2Dir();

/** The pid of a process that has ended. */
async function deadPid(): Promise<number> {
  const child = new Deno.Command("true").spawn();
  await child.status;
  return child.pid;
}

/** Gone and live owners, a busy and an empty cgroup, a foreign name: only the empty one goes. */
async function sweepsOnlyEmptyCgroupsOfGoneProcesses(root: string): Promise<void> {
  // A parent of the test's own, so that what other tests' processes left is not in the count.
  const parent = `${root}/coop-sweep-test-${Deno.pid}`;
  mkdirSync(parent);
  const gone = await deadPid();
  const sleeper = new Deno.Command("sleep", { args: ["30"] }).spawn();
  const dirs = {
    empty: `${parent}/coop-${gone}-sweep-1`,
    busy: `${parent}/coop-${gone}-sweep-2`,
    live: `${parent}/coop-${Deno.pid}-sweep-3`,
    other: `${parent}/coopx-${gone}-sweep-4`,
  };
  try {
    for (const dir of Object.values(dirs)) mkdirSync(dir);
    writeFileSync(`${dirs.busy}/cgroup.procs`, String(sleeper.pid));
    const sweep = sweepDeadSandboxCgroups([parent]);
    assertEquals(sweep.removed, [dirs.empty]);
    assertEquals(sweep.kept, [dirs.busy], "rmdir refuses a cgroup with a task");
    assertEquals(
      Object.values(dirs).map((dir) => existsSync(dir)),
      [false, true, true, true],
    );
  } finally {
    sleeper.kill("SIGKILL");
    await sleeper.status;
    for (const dir of [...Object.values(dirs), parent]) {
      await until(`${dir} removed`, () => {
        try {
          rmdirSync(dir);
        } catch (error) {
          return (error as { code?: string }).code === "ENOENT";
        }
        return true;
      });
    }
  }
}

Deno.test({
  name: "a sweep removes the empty cgroups of gone processes, and nothing else",
  ignore: skip !== null,
  fn: () => sweepsOnlyEmptyCgroupsOfGoneProcesses(parents[0]),
});

Deno.test({
  name: "a sweep keeps to the same rules in a cgroup v2 hierarchy",
  ignore: skip !== null || v2Dir === null,
  fn: () => sweepsOnlyEmptyCgroupsOfGoneProcesses(v2Dir!),
});

Deno.test({
  name: "coop start removes what a gateway killed with SIGKILL left in its cgroups",
  ignore: skip !== null,
  fn: async () => {
    const home = await makeCoopHome(
      `[agent]\nstate_dir = "{{dir}}/state"\n[channels.http]\nenabled = true\nlisten = "127.0.0.1:0"\n`,
    );
    const left = (pid: number) =>
      parents.flatMap((parent) =>
        readdirSync(parent).filter((name) => name.startsWith(`coop-${pid}-`))
          .map((name) => `${parent}/${name}`)
      );
    try {
      const first = await startGateway(home);
      first.child.kill("SIGKILL");
      await first.status;
      // Its idle inits end when their go sockets close; the sweep leaves a cgroup with a task.
      const tasks = (dir: string) => readFileSync(`${dir}/cgroup.procs`, "utf8").trim();
      await until("its sandboxes ended", () => left(first.child.pid).every((d) => !tasks(d)));
      // Whatever it had made (idle inits' cgroups), and one more for certain.
      mkdirSync(`${parents[0]}/coop-${first.child.pid}-killed-1`);
      const second = await startGateway(home);
      try {
        await until("the killed gateway's cgroups swept", () => left(first.child.pid).length === 0);
        assertEquals(left(first.child.pid), []);
      } finally {
        await stopGateway(second);
      }
    } finally {
      await Deno.remove(home.dir, { recursive: true });
    }
  },
});
