/**
 * `killAll` (a sandbox's leftovers at its end, where there is no `cgroup.kill`): it signals the
 * processes `cgroup.procs` lists, and never a process that is not in that cgroup — a listed one
 * may have exited and its pid been reused by then. The stand-in below lists the pid of a process
 * in no such cgroup, as `cgroup.procs` would after a reuse; the real one (root, a v1 hierarchy)
 * holds a process that must be killed.
 * @module
 */
import { mkdirSync, rmdirSync, writeFileSync } from "node:fs";
import { assertEquals } from "../assert.ts";
import { loadTrampoline } from "../../src/sandbox/ffi.ts";
import { killAll } from "../../src/sandbox/cgroup_files.ts";
import { cgroupHost } from "../../src/sandbox/cgroup_host.ts";

let made = 0;
/** A directory named as the gateway names sandbox cgroups, under `parent`. */
function cgroupName(parent: string): string {
  return `${parent}/coop-${Deno.pid}-killtest-${++made}`;
}

Deno.test("killAll: a listed pid that is not in the cgroup (reused) is not signalled", async () => {
  const lib = await loadTrampoline();
  const root = await Deno.makeTempDir({ prefix: "coop-kill-test-" });
  const dir = cgroupName(root);
  mkdirSync(dir);
  const other = new Deno.Command("sleep", { args: ["30"] }).spawn();
  try {
    writeFileSync(`${dir}/cgroup.procs`, `${other.pid}\n`);
    killAll(dir, lib);
  } finally {
    // Had killAll sent SIGKILL, it would have won over this later SIGTERM.
    other.kill("SIGTERM");
    assertEquals((await other.status).signal, "SIGTERM", "killAll left the other process alone");
    await Deno.remove(root, { recursive: true });
  }
});

const v1Parent = Object.values(cgroupHost().v1.dirs)[0];
const skip = Deno.uid() !== 0
  ? `uid ${Deno.uid()} makes no sandbox cgroups (the rlimit path)`
  : v1Parent === undefined
  ? "no cgroup v1 hierarchy here"
  : null;
if (skip) console.log(`killAll on a real cgroup skipped: ${skip}`);

Deno.test({
  name: "killAll: a process in the cgroup is killed",
  ignore: skip !== null,
  fn: async () => {
    const lib = await loadTrampoline();
    const dir = cgroupName(v1Parent!);
    mkdirSync(dir);
    const inside = new Deno.Command("sleep", { args: ["30"] }).spawn();
    try {
      writeFileSync(`${dir}/cgroup.procs`, String(inside.pid));
      killAll(dir, lib);
      assertEquals((await inside.status).signal, "SIGKILL");
    } finally {
      try {
        inside.kill("SIGKILL");
      } catch {
        // killed by killAll
      }
      await inside.status;
      rmdirSync(dir);
    }
  },
});
