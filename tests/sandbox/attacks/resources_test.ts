// ATTACKS.md §4.5 — resource exhaustion. Limits (cgroup, rlimits, quotas) are not built yet;
// what holds today is the wall-clock timeout, the output cap and the pid-1 reaper.
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { hostProcessesWith, processFootprint } from "../harness.ts";
import { type Attack, attackSuite, keyValues } from "./attack_table.ts";

const LIMITS = "resource limits (limits-and-network issue)";

attackSuite("§4.5", [
  { id: "R1", name: "fork bomb", waitsFor: LIMITS, expect: () => {} },
  { id: "R2", name: "memory bomb", waitsFor: LIMITS, expect: () => {} },
  { id: "R3", name: "CPU burn", waitsFor: LIMITS, expect: () => {} },
  longSleep(),
  { id: "R5", name: "fd exhaustion", waitsFor: LIMITS, expect: () => {} },
  outputFlood(),
  { id: "R7", name: "inotify and per-uid kernel quotas", waitsFor: LIMITS, expect: () => {} },
  {
    id: "R8",
    name: "zombie and pid churn is reaped by the sandbox's pid 1",
    // 500 orphans: each subshell exits at once, so its `sleep 0` is reparented to the init.
    script: `for i in $(seq 500); do (sleep 0 &); done
for try in $(seq 40); do
  zombies=$(grep -l '^State:.Z' /proc/[0-9]*/status 2>/dev/null | wc -l)
  [ "$zombies" = 0 ] && break
  sleep 0.05
done
echo zombies=$zombies; echo last_pid=$(sh -c 'echo $$')`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out.zombies, "0");
      assert(Number(out.last_pid) > 1000, `only ${out.last_pid} pids were used`);
      assertEquals(processFootprint().zombies, 0, "no zombie children of the gateway");
    },
  },
  { id: "R10", name: "disk-inode exhaustion", waitsFor: LIMITS, expect: () => {} },
]);

/** R4: a hang ends at the wall-clock timeout, the whole tree SIGKILLed. */
function longSleep(): Attack {
  const tag = `995.${Math.floor(Math.random() * 1e9)}`;
  return {
    id: "R4",
    name: "long sleep and a read that never returns",
    timeoutMs: 1000,
    script: `sleep ${tag} & setsid sleep ${tag} &
mkfifo /tmp/never && cat /tmp/never`,
    expect: (r) => {
      assertEquals(r.timedOut, true);
      assertEquals(r.signal, "SIGKILL");
      assertEquals(r.exitCode, 137);
      assert(r.durationMs < 2000, `took ${r.durationMs} ms`);
      assertEquals(hostProcessesWith(`sleep ${tag}`), []);
    },
  };
}

/** R6: endless output on both streams is capped at 1 MiB each; the gateway stays small. */
function outputFlood(): Attack {
  let rssBefore = 0;
  return {
    id: "R6",
    name: "output flood",
    timeoutMs: 1500,
    prepare: () => {
      rssBefore = Deno.memoryUsage().rss;
      return "";
    },
    script: "yes & cat /dev/urandom >&2",
    expect: (r) => {
      const grown = Deno.memoryUsage().rss - rssBefore;
      // Neither stream ends by itself: the timeout does, after far more than 1 MiB went by.
      assertEquals(r.timedOut, true);
      assertEquals(r.truncated, true);
      assertEquals(r.stdout.length, 1 << 20);
      assertMatch(r.stdout.slice(0, 4), /^y\ny\n$/);
      // Invalid UTF-8 decodes one replacement character per byte at most.
      assert(r.stderr.length > 0 && r.stderr.length <= 1 << 20, `stderr ${r.stderr.length}`);
      assert(grown < 64 * 2 ** 20, `rss grew by ${(grown / 2 ** 20).toFixed(1)} MiB`);
    },
  };
}
