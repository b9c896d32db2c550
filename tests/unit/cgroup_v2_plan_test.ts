// Issue 15, item 2: which limits path a sandbox gets on stand-in hosts — a delegated cgroup v2
// subtree, a v2 cgroup not delegated to the invoker, a v1/v2 hybrid (this machine), no cgroups —
// and the cgroup v2 files it writes, against a stand-in directory tree.
import { assertEquals, assertMatch } from "../assert.ts";
import { planLimits, resolvePolicy } from "../../src/sandbox/mod.ts";
import { describeCgroupHost } from "../../src/sandbox/cgroup_host.ts";
import { CgroupV2Sandbox, enableControllers } from "../../src/sandbox/cgroup_v2.ts";

const MiB = 2 ** 20;
const LIMITS = { workspace: "/w", memoryBytes: 256 * MiB, pidsLimit: 64 };

// A pure v2 host (Ubuntu 22.04+, Debian 11+, Fedora): Coop runs as a systemd service.
const V2_MOUNTINFO = "30 25 0:26 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw,nsdelegate";
const V2_PROC = "0::/system.slice/coop.service\n";
const SERVICE = "/sys/fs/cgroup/system.slice/coop.service";
const offers = (controllers: string) => (path: string) =>
  path === `${SERVICE}/cgroup.controllers` ? `${controllers}\n` : null;
// The service's files belong to uid 1000 when systemd delegated it (Delegate=yes), else to root.
const ownedBy = (uid: number) => (_path: string) => uid;

// A v1/v2 hybrid like this machine: v2 offers only hugetlb.
const HYBRID_MOUNTINFO = [
  "30 25 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw",
  "31 25 0:27 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu",
  "34 25 0:30 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
  "38 25 0:34 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
].join("\n");
const HYBRID_PROC = "8:pids:/\n4:memory:/\n1:cpu:/\n0::/\n";

Deno.test("path choice: v2 delegated → cgroup-v2 with memory.max, swap 0, pids.max, cpu.max", () => {
  const host = describeCgroupHost(
    V2_MOUNTINFO,
    V2_PROC,
    1000,
    offers("cpu memory pids"),
    ownedBy(1000),
  );
  assertEquals(host.v2, { dir: SERVICE, controllers: ["cpu", "memory", "pids"] });
  const plan = planLimits(resolvePolicy({ ...LIMITS, cpus: 1.5 }), host);
  assertEquals(plan.applied.path, "cgroup-v2");
  assertEquals(plan.cgroupV2, {
    parent: SERVICE,
    controllers: ["memory", "pids", "cpu"],
    files: [
      ["memory.max", String(256 * MiB)],
      ["memory.swap.max", "0"],
      ["pids.max", "64"],
      ["cpu.max", "150000 100000"],
    ],
  });
  assertEquals(plan.applied.memory, { bytes: 256 * MiB, enforcedBy: "memory.max" });
  assertEquals(plan.applied.cpus, { cores: 1.5, enforcedBy: "cpu.max" });
  assertEquals(plan.cgroupV1, undefined);
  // No RLIMIT_AS/NPROC: the cgroup bounds the whole sandbox (and RLIMIT_AS would switch the
  // init to the rlimit path's IPC bounds).
  assertEquals(plan.rlimits.length, 3);
  // Root on a pure v2 host owns every cgroup: the same path.
  const root = describeCgroupHost(V2_MOUNTINFO, V2_PROC, 0, offers("memory pids"), ownedBy(0));
  assertEquals(planLimits(resolvePolicy(LIMITS), root).applied.path, "cgroup-v2");
});

Deno.test("path choice: v2 delegated, no limit requested → still a cgroup of its own", () => {
  const host = describeCgroupHost(
    V2_MOUNTINFO,
    V2_PROC,
    1000,
    offers("memory pids"),
    ownedBy(1000),
  );
  const plan = planLimits(resolvePolicy({ workspace: "/w" }), host);
  assertEquals(plan.applied.path, "cgroup-v2");
  assertEquals(plan.cgroupV2, { parent: SERVICE, controllers: [], files: [] });
});

Deno.test("path choice: v2 not delegated → rlimit, and the reason says what to do", () => {
  const host = describeCgroupHost(V2_MOUNTINFO, V2_PROC, 1000, offers("memory pids"), ownedBy(0));
  assertEquals(host.v2, null);
  assertMatch(host.v2Reason, /not delegated to uid 1000 .*Delegate=yes.*systemd-run --user/);
  const plan = planLimits(resolvePolicy(LIMITS), host);
  assertEquals(plan.applied.path, "rlimit");
  assertMatch(plan.applied.reason, /not delegated/);
});

Deno.test("path choice: v2 delegated without cpu, cpus requested → no silent drop", () => {
  const host = describeCgroupHost(
    V2_MOUNTINFO,
    V2_PROC,
    1000,
    offers("memory pids"),
    ownedBy(1000),
  );
  const plan = planLimits(resolvePolicy(LIMITS), host);
  assertEquals(plan.applied.path, "cgroup-v2");
  let error = "";
  try {
    planLimits(resolvePolicy({ ...LIMITS, cpus: 1 }), host);
  } catch (e) {
    error = (e as Error).message;
  }
  assertMatch(error, /cpus = 1 cannot be enforced here: .*cgroup v2 at \S+ has no cpu controller/);
});

Deno.test("path choice: v2 read-only, or shared with strangers → not used, saying why", () => {
  const ro = "30 25 0:26 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw";
  const readOnly = describeCgroupHost(ro, V2_PROC, 0, offers("memory pids"), ownedBy(0));
  assertEquals(readOnly.v2, null);
  assertMatch(readOnly.v2Reason, /mounted read-only/);
  // A delegated cgroup that also holds a process of someone else's (not the gateway, pid 42).
  const files = (p: string) =>
    p.endsWith("cgroup.controllers")
      ? "memory pids\n"
      : p.endsWith("cgroup.procs")
      ? "42\n4242\n"
      : p.endsWith("cgroup.subtree_control")
      ? "\n"
      : null;
  const shared = describeCgroupHost(V2_MOUNTINFO, V2_PROC, 1000, files, ownedBy(1000), 42);
  assertEquals(shared.v2, null);
  assertMatch(shared.v2Reason, /also holds 1 process\(es\) that are not the gateway's/);
  // Only the gateway: usable (its first sandbox moves it into the leaf coop-gateway).
  const alone = (p: string) => p.endsWith("cgroup.procs") ? "42\n" : files(p);
  const own = describeCgroupHost(V2_MOUNTINFO, V2_PROC, 1000, alone, ownedBy(1000), 42);
  assertEquals(own.v2?.dir, SERVICE);
});

Deno.test("path choice: hybrid (this machine) → cgroup-v1 as root, rlimit otherwise", () => {
  const read = (p: string) => p.endsWith("cgroup.controllers") ? "hugetlb\n" : null;
  const root = describeCgroupHost(HYBRID_MOUNTINFO, HYBRID_PROC, 0, read, ownedBy(0));
  assertEquals(root.v2, null);
  const rootPlan = planLimits(resolvePolicy(LIMITS), root);
  assertEquals(rootPlan.applied.path, "cgroup-v1");
  assertMatch(rootPlan.applied.reason, /offers \[hugetlb\].*no memory\/pids controller/);
  const user = describeCgroupHost(HYBRID_MOUNTINFO, HYBRID_PROC, 1000, read, ownedBy(0));
  assertEquals(planLimits(resolvePolicy(LIMITS), user).applied.path, "rlimit");
});

Deno.test("path choice: no cgroups mounted → rlimit", () => {
  const host = describeCgroupHost("", "", 0, () => null, ownedBy(0));
  assertEquals(host.v2Reason, "no cgroup2 filesystem is mounted");
  const plan = planLimits(resolvePolicy(LIMITS), host);
  assertEquals(plan.applied.path, "rlimit");
  assertEquals(plan.applied.pids, { max: 64, enforcedBy: "RLIMIT_NPROC" });
});

/** A stand-in delegated cgroup: a plain directory with the files a cgroupfs parent has. */
async function standInParent(): Promise<string> {
  const parent = await Deno.makeTempDir({ prefix: "coop-cgroup-v2-" });
  await Deno.writeTextFile(`${parent}/cgroup.controllers`, "cpu memory pids\n");
  await Deno.writeTextFile(`${parent}/cgroup.subtree_control`, "\n");
  await Deno.writeTextFile(`${parent}/cgroup.procs`, "");
  return parent;
}

Deno.test("cgroup v2 files against a stand-in tree: controllers enabled, limits written, events read", async () => {
  const parent = await standInParent();
  try {
    const host = describeCgroupHost(
      V2_MOUNTINFO,
      V2_PROC,
      1000,
      (p) => p.endsWith("cgroup.controllers") ? "cpu memory pids\n" : null,
      ownedBy(1000),
    );
    const plan = planLimits(resolvePolicy({ ...LIMITS, cpus: 0.5 }), host).cgroupV2!;
    const cgroup = CgroupV2Sandbox.create({ ...plan, parent });
    // A plain file keeps only the last write; on cgroupfs each "+controller" adds one.
    assertEquals(await Deno.readTextFile(`${parent}/cgroup.subtree_control`), "+memory +pids +cpu");
    assertMatch(cgroup.dir, new RegExp(`^${parent}/coop-${Deno.pid}-\\w+-\\d+$`));
    const read = (f: string) => Deno.readTextFile(`${cgroup.dir}/${f}`);
    assertEquals(await read("memory.max"), String(256 * MiB));
    assertEquals(await read("pids.max"), "64");
    assertEquals(await read("cpu.max"), "50000 100000");
    // memory.swap.max is skipped when absent (no swap accounting), never created.
    assertEquals(await Deno.stat(`${cgroup.dir}/memory.swap.max`).catch(() => null), null);
    assertEquals(new TextDecoder().decode(cgroup.attachList()), `${cgroup.dir}\0\0`);
    assertEquals(cgroup.violations(), { oomKilled: false, pidsLimitHit: false });
    await Deno.writeTextFile(
      `${cgroup.dir}/memory.events`,
      "low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n",
    );
    await Deno.writeTextFile(`${cgroup.dir}/pids.events`, "max 17\n");
    assertEquals(cgroup.violations(), { oomKilled: true, pidsLimitHit: true });
    // Once controllers are enabled for a parent they are not written again.
    await Deno.writeTextFile(`${parent}/cgroup.subtree_control`, "memory pids cpu\n");
    enableControllers(parent, ["memory", "pids"]);
    assertEquals(await Deno.readTextFile(`${parent}/cgroup.subtree_control`), "memory pids cpu\n");
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});

Deno.test("cgroup v2 against a stand-in tree: a write that fails removes the cgroup and fails closed", async () => {
  const parent = await standInParent();
  try {
    let message = "";
    try {
      // A directory where a limit file should be: the write fails (EISDIR).
      CgroupV2Sandbox.create({ parent, controllers: [], files: [["sub/pids.max", "64"]] });
    } catch (error) {
      message = `${(error as Error).name}: ${(error as Error).message}`;
    }
    assertMatch(message, /SandboxSetupError: .*cannot prepare the sandbox's cgroup v2 limits/);
    const left = [...Deno.readDirSync(parent)].filter((e) => e.name.startsWith("coop-"));
    assertEquals(left, []);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
});
