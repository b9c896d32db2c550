/**
 * Cgroups made ahead and removed after (issue 15), attacked from inside: a command whose
 * limits are the previous command's runs in the cgroup prepared with its init, and the limits
 * hold there (a fork bomb stops at pids.max, an allocation past memory is OOM-killed); other
 * limits get a fresh cgroup; nothing is left once the removals are awaited, or when the
 * gateway exits without awaiting them. Cgroup v1 as root here; an unprivileged invoker gets
 * the rlimit path (no cgroup to prepare), so these are root-only.
 * @module
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { exec, settleSandboxCgroups, spawnSandboxed } from "../../src/sandbox/mod.ts";
import { cgroupHost } from "../../src/sandbox/cgroup_host.ts";
import { sandboxCgroupPrefix } from "../../src/sandbox/cgroup_files.ts";
import { discardPrestarted, prestartedPids } from "../../src/sandbox/prestart.ts";
import { SANDBOX_TESTS, sandboxTest, until, withWorkspace } from "./harness.ts";

const MiB = 2 ** 20;
const ROOT = Deno.uid() === 0;
const V1 = cgroupHost().v1.dirs;
const skip = !ROOT
  ? `uid ${Deno.uid()} gets the rlimit path: no cgroup is made, none prepared`
  : !V1.pids || !V1.memory
  ? "no cgroup v1 memory and pids hierarchies here"
  : null;
if (skip && SANDBOX_TESTS) console.log(`cgroup-ahead tests skipped: ${skip}`);

/** Each process forks two more and becomes a sleep, until forks fail (limits_test.ts). */
const BOMB = "bomb() { bomb | bomb & exec sleep 100; }; (bomb) & exec sleep 100";

/** The leaf of `pid`'s cgroup in a v1 hierarchy, from /proc/<pid>/cgroup ("" if none). */
function leafOf(cgroupText: string, controller: string): string {
  const line = cgroupText.split("\n").find((l) => l.split(":")[1]?.split(",").includes(controller));
  return line?.slice(line.lastIndexOf("/") + 1) ?? "";
}

/** This module's sandbox cgroups in the v1 hierarchies (its realm's: see limits_test.ts). */
function ownCgroups(): string[] {
  const found: string[] = [];
  for (const dir of Object.values(V1)) {
    for (const entry of Deno.readDirSync(dir)) {
      if (entry.isDirectory && entry.name.startsWith(sandboxCgroupPrefix())) {
        found.push(`${dir}/${entry.name}`);
      }
    }
  }
  return found;
}

sandboxTest({
  name: "the same limits again: the prepared cgroup is used, and its limits hold inside",
  ignore: skip !== null,
}, async () => {
  await withWorkspace(async (workspace) => {
    discardPrestarted();
    await settleSandboxCgroups();
    const policy = { workspace, pidsLimit: 48, memoryBytes: 256 * MiB };
    await exec(policy, ["true"]);
    const [idle] = prestartedPids();
    assert(idle, "an idle init was prepared");
    // Its cgroup is made once the starting command's event-loop turn has ended.
    const inCgroup = () =>
      leafOf(Deno.readTextFileSync(`/proc/${idle}/cgroup`), "memory").startsWith("coop-");
    assert(await until(inCgroup, 2000), "the idle init is moved into its cgroup");
    const idleCgroup = Deno.readTextFileSync(`/proc/${idle}/cgroup`);
    const pidsLeaf = leafOf(idleCgroup, "pids"), memoryLeaf = leafOf(idleCgroup, "memory");
    assertMatch(
      pidsLeaf,
      new RegExp(`^${sandboxCgroupPrefix()}`),
      "the idle init is in its cgroup",
    );
    assertEquals(Deno.readTextFileSync(`${V1.pids}/${pidsLeaf}/pids.max`).trim(), "48");
    assertEquals(
      Deno.readTextFileSync(`${V1.memory}/${memoryLeaf}/memory.limit_in_bytes`).trim(),
      String(256 * MiB),
    );

    const bomb = await exec(policy, ["sh", "-c", `cat /proc/self/cgroup; ${BOMB}`], {
      timeoutMs: 2500,
    });
    assertEquals(leafOf(bomb.stdout, "pids"), pidsLeaf, "the command ran in the prepared cgroup");
    assertEquals([bomb.timedOut, bomb.pidsLimitHit], [true, true], "the bomb met pids.max");

    // Prepared again for the same limits; the allocation is OOM-killed there.
    const big = await exec(policy, [
      "sh",
      "-c",
      "cat /proc/self/cgroup; exec python3 -c 'b = bytearray(1 << 30)'",
    ], { timeoutMs: 30_000 });
    assertMatch(leafOf(big.stdout, "memory"), new RegExp(`^${sandboxCgroupPrefix()}`));
    assert(leafOf(big.stdout, "memory") !== memoryLeaf, "a cgroup serves one command");
    assertEquals([big.oomKilled, big.signal], [true, "SIGKILL"]);

    await settleSandboxCgroups();
    assertEquals(ownCgroups(), [], "no cgroup left once the removals are awaited");
  });
});

sandboxTest({
  name: "other limits: a fresh cgroup with them, the prepared one removed",
  ignore: skip !== null,
}, async () => {
  await withWorkspace(async (workspace) => {
    discardPrestarted();
    await settleSandboxCgroups();
    await exec({ workspace, pidsLimit: 64 }, ["true"]);
    const [idle] = prestartedPids();
    const idlePids = () => leafOf(Deno.readTextFileSync(`/proc/${idle}/cgroup`), "pids");
    assert(await until(() => idlePids().startsWith("coop-"), 2000), "the idle init's cgroup");
    const prepared = idlePids();
    assertEquals(Deno.readTextFileSync(`${V1.pids}/${prepared}/pids.max`).trim(), "64");

    const child = await spawnSandboxed({ workspace, pidsLimit: 24 }, [
      "sh",
      "-c",
      `cat /proc/self/cgroup; ${BOMB}`,
    ], { timeoutMs: 2000 });
    let out = "";
    child.stdout.on("data", (chunk: Uint8Array) => out += new TextDecoder().decode(chunk));
    assert(await until(() => leafOf(out, "pids") !== "", 2000), "the command printed its cgroup");
    const leaf = leafOf(out, "pids");
    assert(leaf !== prepared, "not the cgroup prepared for pids 64");
    assertEquals(Deno.readTextFileSync(`${V1.pids}/${leaf}/pids.max`).trim(), "24");
    let peak = 0;
    while (!(await Promise.race([child.status.then(() => true), until(() => false, 50)]))) {
      try {
        peak = Math.max(peak, Number(Deno.readTextFileSync(`${V1.pids}/${leaf}/pids.current`)));
      } catch {
        break; // removed: it ended
      }
    }
    const status = await child.status;
    assertEquals([status.timedOut, status.pidsLimitHit], [true, true]);
    assert(peak <= 24 && peak >= 12, `pids.current peaked at ${peak} under a limit of 24`);

    await settleSandboxCgroups();
    assertEquals(ownCgroups(), [], "the pids 64 cgroup and the used one are removed");
  });
});

sandboxTest({
  name: "settling stops a cgroup still to be prepared; every removal still happens",
  ignore: skip !== null,
}, async () => {
  await withWorkspace(async (workspace) => {
    discardPrestarted();
    await settleSandboxCgroups();
    // Settled in the very turn the command started: its successor's cgroup is not made yet
    // (a timer), and must then never be.
    const child = await spawnSandboxed({ workspace, pidsLimit: 40 }, ["true"]);
    await settleSandboxCgroups();
    await child.status;
    // Not settled again: the command's own cgroup goes by itself, and nothing comes after it.
    assert(
      await until(() => ownCgroups().length === 0, 2000),
      `left: ${ownCgroups().join(", ")}`,
    );
    await new Promise((done) => setTimeout(done, 50));
    assertEquals(ownCgroups(), []);
  });
});

sandboxTest({
  name: "a gateway that exits without awaiting the removals leaves no cgroup behind",
  ignore: skip !== null,
}, async () => {
  await withWorkspace(async (workspace) => {
    // One command with limits (its cgroup is still being removed, the next one is prepared),
    // then Deno.exit() at once: the exit hook removes both.
    const script = `
      import { exec } from ${
      JSON.stringify(new URL("../../src/sandbox/mod.ts", import.meta.url).href)
    };
      await exec({ workspace: ${JSON.stringify(workspace)}, pidsLimit: 40 }, ["true"]);
      console.log(Deno.pid);
      Deno.exit(0);
    `;
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--quiet", script],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert(output.success, new TextDecoder().decode(output.stderr));
    const pid = Number(new TextDecoder().decode(output.stdout).trim());
    const left = () =>
      [...Deno.readDirSync(V1.pids!)].filter((e) => e.name.startsWith(`coop-${pid}-`));
    assertEquals(left().map((e) => e.name), []);
  });
});
