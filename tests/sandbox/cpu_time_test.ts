/**
 * `ExecResult.cpu` is measured, not estimated: it covers the command, its children, and a
 * background process the sandbox's teardown killed — each at least what that process's own
 * kernel counters said — and it never exceeds what the cores could have done in the wall time.
 */
import { assert, assertEquals } from "../assert.ts";
import { exec } from "../../src/sandbox/mod.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";

/** Clock ticks per second of /proc/<pid>/stat's times (USER_HZ). */
async function clockTicks(): Promise<number> {
  const out = await new Deno.Command("getconf", { args: ["CLK_TCK"] }).output();
  return Number(new TextDecoder().decode(out.stdout).trim()) || 100;
}

/** utime + stime + cutime + cstime in ms, from a saved /proc/self/stat line. */
function statCpuMs(line: string, ticks: number): number {
  const fields = line.slice(line.lastIndexOf(")") + 2).trim().split(" ").map(Number);
  const [utime, stime, cutime, cstime] = fields.slice(11, 15);
  assert([utime, stime, cutime, cstime].every(Number.isFinite), `bad stat line: ${line}`);
  return (utime + stime + cutime + cstime) * 1000 / ticks;
}

const total = (cpu: { userMs: number; systemMs: number }) => cpu.userMs + cpu.systemMs;

/** A shell loop that keeps saving its own CPU counters (read and echo are builtins: no fork). */
const SPIN_AND_RECORD = (file: string) =>
  `while :; do read -r s < /proc/self/stat; echo "$s" > ${file}.tmp; mv ${file}.tmp ${file}; done`;

sandboxTest("cpu: the command's own and its children's CPU time are counted", async () => {
  const ticks = await clockTicks();
  await withWorkspace(async (workspace) => {
    // Spins in children (each `[`… is a builtin, `mv` a child) until the second after next — 1 to
    // 2 s of wall time: to the next second only, it could be a few ms, under one clock tick of CPU
    // (seen unprivileged at load ~10) — then saves the shell's counters, children included.
    const script = `end=$(($(date +%s) + 2)); ${
      SPIN_AND_RECORD("/work/a").replace(
        "while :;",
        'while [ "$(date +%s)" -lt "$end" ];',
      )
    }; read -r s < /proc/self/stat; echo "$s" > /work/final`;
    const r = await exec({ workspace }, ["sh", "-c", script], { timeoutMs: 30_000 });
    assertEquals(r.exitCode, 0, r.stderr);
    assertEquals(r.cpu.measuredBy, "rusage");
    const own = statCpuMs(await Deno.readTextFile(`${workspace}/final`), ticks);
    assert(own > 0, "the script used some CPU");
    assert(total(r.cpu) >= own, `measured ${total(r.cpu)} ms < the shell's own ${own} ms`);
    const cores = navigator.hardwareConcurrency;
    assert(
      total(r.cpu) <= r.durationMs * cores + 50,
      `${total(r.cpu)} ms of CPU in ${r.durationMs} ms on ${cores} cores`,
    );
  });
});

sandboxTest("cpu: a background process killed by the sandbox's teardown is counted", async () => {
  const ticks = await clockTicks();
  await withWorkspace(async (workspace) => {
    // The spinner outlives the command; the init's exit kills it, and its time must still count.
    // The command ends once the spinner has recorded 10 clock ticks of CPU (or after 20 s): a
    // fixed wait gave a starved spinner too little.
    const script = `(${SPIN_AND_RECORD("/work/bg")}) & end=$(($(date +%s) + 20))
until [ -e /work/bg ] && read -r _ _ _ _ _ _ _ _ _ _ _ _ _ u s _ < /work/bg &&
  [ $((u + s)) -ge 10 ]; do [ "$(date +%s)" -ge "$end" ] && break; sleep 0.05; done; exit 0`;
    const r = await exec({ workspace }, ["sh", "-c", script], { timeoutMs: 30_000 });
    assertEquals(r.exitCode, 0, r.stderr);
    const background = statCpuMs(await Deno.readTextFile(`${workspace}/bg`), ticks);
    assert(background >= 50, `the background spinner ran (${background} ms)`);
    assert(
      total(r.cpu) >= background,
      `measured ${total(r.cpu)} ms < the killed background process's ${background} ms`,
    );
  });
});

sandboxTest("cpu: a command killed by its timeout still reports its CPU time", async () => {
  await withWorkspace(async (workspace) => {
    const r = await exec({ workspace }, ["sh", "-c", "while :; do :; done"], { timeoutMs: 500 });
    assertEquals(r.timedOut, true);
    // It spun for most of half a second; even a loaded machine gives it some of that.
    assert(total(r.cpu) > 20, `a spinning command used ${total(r.cpu)} ms`);
    assert(total(r.cpu) <= r.durationMs * navigator.hardwareConcurrency + 50);
  });
});

sandboxTest(
  "cpu: with network proxy the forwarder does not hold the end up, and time counts",
  async () => {
    const ticks = await clockTicks();
    await withWorkspace(async (workspace) => {
      // The proxy's forwarder runs outside the init's Landlock domain, so the init cannot kill
      // it; it must still end promptly, with the command's background process counted.
      const script = `(${SPIN_AND_RECORD("/work/bg")}) & sleep 0.6; exit 3`;
      const r = await exec({ workspace, network: "proxy" }, ["sh", "-c", script], {
        timeoutMs: 20_000,
      });
      assertEquals([r.exitCode, r.timedOut], [3, false], r.stderr);
      assert(r.durationMs < 10_000, `ended after ${r.durationMs} ms`);
      const background = statCpuMs(await Deno.readTextFile(`${workspace}/bg`), ticks);
      assert(total(r.cpu) >= background, `measured ${total(r.cpu)} ms < ${background} ms`);
    });
  },
);
