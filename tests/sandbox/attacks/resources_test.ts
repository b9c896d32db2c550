// ATTACKS.md §4.5 — resource exhaustion, under the limits a policy sets (cgroup v1 as root,
// rlimits otherwise; docs/limits.md), the wall-clock timeout, the output cap and the pid-1 reaper.
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { hostProcessesWith, processFootprint } from "../harness.ts";
import { type Attack, attackSuite, keyValues } from "./attack_table.ts";

const MiB = 1 << 20;

attackSuite("§4.5", [
  forkBomb(),
  {
    id: "R2",
    name: "memory bomb under memory 256m",
    needs: ["python3"],
    policy: { memoryBytes: 256 * MiB },
    argv: ["python3", "-c", "b = bytearray(1 << 30); print('ALLOCATED', len(b))"],
    expect: (r) => {
      assert(!r.stdout.includes("ALLOCATED"), "the 1 GiB allocation must not succeed");
      // cgroup path: the kernel OOM-kills inside the sandbox; rlimit path: malloc fails.
      if (r.limits.path === "rlimit") assertMatch(r.stderr, /MemoryError/);
      else assertEquals([r.oomKilled, r.signal], [true, "SIGKILL"]);
    },
  },
  cpuBurn(),
  longSleep(),
  {
    id: "R5",
    name: "fd exhaustion stops at RLIMIT_NOFILE, whose hard limit cannot be raised",
    needs: ["python3"],
    argv: [
      "python3",
      "-c",
      `
import resource, os
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
try:
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 2, hard * 2)); print("raise=OK")
except (ValueError, OSError) as e:
    print("raise=refused")
fds = []
try:
    while True: fds.append(os.open("/dev/null", os.O_RDONLY))
except OSError as e:
    print("stop=" + ("EMFILE" if e.errno == 24 else str(e.errno)))
print("opened=%d hard=%d" % (len(fds), hard))`,
    ],
    expect: (r) => {
      assertMatch(r.stdout, /raise=refused/);
      assertMatch(r.stdout, /stop=EMFILE/);
      const opened = Number(/opened=(\d+)/.exec(r.stdout)?.[1]);
      assert(opened < 1024, `${opened} files opened`);
    },
  },
  outputFlood(),
  {
    id: "R7",
    name: "inotify and per-uid kernel quotas",
    waitsFor: "a host uid per sandbox; today every sandbox shares the per-uid kernel quotas of " +
      "one host uid, the invoker's (or, for root, the dedicated sandbox uid) — docs/limits.md, " +
      "residual risk",
    expect: () => {},
  },
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
]);

/**
 * R1: a fork bomb under pids 64 is contained and leaves nothing behind.
 *
 * Two phases, both in builtins only once the bomb starts (the counting shell's own fork could
 * lose the race for the last slot, and dash exits on "Cannot fork"):
 * 1. the bomb runs unobstructed until its first refused fork: its stderr goes to a file and the
 *    shell polls that file with `read`. Freezing from the start (as this test once did) left the
 *    bomb so little CPU on a loaded CI machine that it never reached the limit in its second.
 * 2. the shell samples the count: a walk of `/proc` while the bomb churns counts processes that
 *    never coexisted (one reaped behind the walk, one born ahead of it), so each sample freezes
 *    the sandbox (`kill -STOP -1`) and counts only once every process is stopped or a zombie —
 *    no fork is then in flight — and every listed one is still there after the walk.
 */
function forkBomb(): Attack {
  const marker = `coop-bomb-${Math.floor(Math.random() * 1e9)}`;
  const script = `settled() {
    for p; do
      [ "$p" = /proc/1 ] || [ "$p" = /proc/$$ ] && continue
      read -r pid comm state rest 2>/dev/null <"$p/stat" || return 1
      case $state in T | Z) ;; *) return 1 ;; esac
    done
  }
  : >/tmp/bomb.err
  sleep 3 & timer=$!
  ( b() { b | b & }; b ) 2>/tmp/bomb.err &
  refused=
  # The shell writes its error in pieces ("sh: 10: " then "Cannot fork"): a read between them
  # sees half a line, so wait for the whole refusal, not for any text.
  while kill -0 $timer 2>/dev/null; do
    read -r refused </tmp/bomb.err
    case $refused in *fork*) break ;; esac
  done
  echo "bomb: $refused" >&2
  peak=0 samples=0
  while [ $samples -lt 20 ] && kill -0 $timer 2>/dev/null; do
    kill -STOP -1
    tries=0
    while [ $tries -lt 100 ]; do
      set -- /proc/[0-9]*
      settled "$@" && break
      tries=$((tries + 1))
    done
    if [ $tries -lt 100 ]; then
      samples=$((samples + 1))
      [ $# -gt $peak ] && peak=$#
    fi
    kill -CONT -1
  done
  echo procs=$peak
  echo samples=$samples`;
  return {
    id: "R1",
    name: "fork bomb under pids 64",
    policy: { pidsLimit: 64 },
    timeoutMs: 10_000,
    argv: ["sh", "-c", script, marker],
    expect: (r) => {
      const out = keyValues(r.stdout);
      const procs = Number(out.procs);
      assert(procs > 0 && procs <= 64, `${procs} processes inside (${out.samples} samples)`);
      // The limit stopped the bomb (it did not just end): its forks were refused inside.
      assertMatch(r.stderr, /bomb: .*Cannot fork/);
      if (r.limits.path !== "rlimit") assertEquals(r.pidsLimitHit, true);
      assertEquals(hostProcessesWith(marker), [], "every bomb process is gone from the host");
    },
  };
}

/** R3: a CPU burn on every core is killed at the timeout, whole tree. */
function cpuBurn(): Attack {
  const marker = `coop-burn-${Math.floor(Math.random() * 1e9)}`;
  return {
    id: "R3",
    name: "CPU burn is killed at the timeout",
    timeoutMs: 1500,
    argv: ["sh", "-c", "for i in 1 2 3 4 5 6 7 8; do (while :; do :; done) & done; wait", marker],
    expect: (r) => {
      assertEquals([r.timedOut, r.signal], [true, "SIGKILL"]);
      assert(r.durationMs < 1500 + 5000, `took ${r.durationMs} ms`);
      assertEquals(hostProcessesWith(marker), []);
    },
  };
}

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
      assert(r.durationMs < 1000 + 5000, `took ${r.durationMs} ms`);
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
