/**
 * What a sandbox is charged for CPU: its cgroup's count (v2 `cpu.stat`, v1 `cpuacct`) when it
 * has one and it is the larger, else the init's rusage — read from stand-in cgroup files.
 */
import { assertEquals } from "../assert.ts";
import { cpuacctV1, cpuStatV2 } from "../../src/sandbox/cgroup_files.ts";
import { sandboxCpuTime } from "../../src/sandbox/reaper.ts";

function withDir(files: Record<string, string>, fn: (dir: string) => void): void {
  const dir = Deno.makeTempDirSync({ prefix: "coop-cgroup-cpu-" });
  try {
    for (const [name, text] of Object.entries(files)) {
      Deno.writeTextFileSync(`${dir}/${name}`, text);
    }
    fn(dir);
  } finally {
    Deno.removeSync(dir, { recursive: true });
  }
}

Deno.test("cpu.stat (v2): user_usec and system_usec, in ms; null without the file or keys", () => {
  const stat = "usage_usec 1500250\nuser_usec 1200250\nsystem_usec 300000\nnr_periods 0\n";
  withDir({ "cpu.stat": stat }, (dir) => {
    assertEquals(cpuStatV2(dir), { userMs: 1200.25, systemMs: 300 });
  });
  withDir({ "cpu.stat": "usage_usec 5\n" }, (dir) => assertEquals(cpuStatV2(dir), null));
  withDir({}, (dir) => assertEquals(cpuStatV2(dir), null));
});

Deno.test("cpuacct (v1): usage_user and usage_sys in ns, in ms; null in another hierarchy", () => {
  withDir({ "cpuacct.usage_user": "2500000000\n", "cpuacct.usage_sys": "1000000\n" }, (dir) => {
    assertEquals(cpuacctV1(dir), { userMs: 2500, systemMs: 1 });
  });
  withDir({ "memory.oom_control": "oom_kill 0\n" }, (dir) => assertEquals(cpuacctV1(dir), null));
});

Deno.test("a sandbox is charged the larger count, and says which it was", () => {
  const rusage = { userMs: 5, systemMs: 1 };
  assertEquals(sandboxCpuTime(rusage, null), { userMs: 5, systemMs: 1, measuredBy: "rusage" });
  assertEquals(sandboxCpuTime(rusage, { userMs: 390, systemMs: 2 }), {
    userMs: 390,
    systemMs: 2,
    measuredBy: "cgroup",
  });
  // The init joins its cgroup after its first steps: a cgroup count a hair below rusage loses.
  assertEquals(sandboxCpuTime(rusage, { userMs: 4.9, systemMs: 1 }).measuredBy, "rusage");
});
