import { deepStrictEqual, ok } from "node:assert/strict";
import { join } from "node:path";
import { type HostRunOptions, runOnHost } from "../../src/tools/host_runner.ts";
import { hostProcessesWith, markedSleep } from "../sandbox/harness.ts";

function options(extra: Partial<HostRunOptions> = {}): HostRunOptions {
  return {
    cwd: Deno.cwd(),
    timeoutMs: 20_000,
    env: { PATH: "/usr/bin:/bin" },
    maxOutputBytes: 1 << 16,
    ...extra,
  };
}

/** Fields 5 and 6 of /proc/<pid>/stat (after the command name): process group and session. */
function groupAndSession(pid: number): [number, number] | null {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return [Number(fields[2]), Number(fields[3])];
  } catch {
    return null;
  }
}

/** True while `pid` is a live (not zombie, not reused by another program) `sleep`. */
function sleeping(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.includes("(sleep)") && !/\) Z /.test(stat);
  } catch {
    return false;
  }
}

async function waitFor<T>(probe: () => T | null, what: string): Promise<T> {
  for (let i = 0; i < 200; i++) {
    const value = probe();
    if (value !== null) return value;
    await new Promise((done) => setTimeout(done, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

Deno.test("a command killed by a signal reports 128 + its number and its name", async () => {
  const table: Array<[string, number]> = [
    ["SIGHUP", 129],
    ["SIGKILL", 137],
    ["SIGUSR1", 138],
    ["SIGSEGV", 139],
    ["SIGUSR2", 140],
    ["SIGTERM", 143],
  ];
  for (const [signal, exitCode] of table) {
    const r = await runOnHost(`kill -${signal.slice(3)} $$`, options());
    deepStrictEqual([r.exitCode, r.signal, r.timedOut], [exitCode, signal, false], signal);
  }
  const plain = await runOnHost("echo out; echo err >&2; exit 3", options());
  deepStrictEqual([plain.exitCode, plain.signal, plain.stdout, plain.stderr], [
    3,
    null,
    "out\n",
    "err\n",
  ]);
});

for (const end of ["cancel", "timeout"] as const) {
  Deno.test(`the owner's command leads its own process group, killed as a group on ${end}`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "coop-host-" });
    const pids = join(dir, "pids");
    const abort = new AbortController();
    try {
      const running = runOnHost(
        `sleep 300 & echo $$ $! > ${pids}; wait`,
        options({
          signal: abort.signal,
          timeoutMs: end === "timeout" ? 3000 : 20_000,
        }),
      );
      const [shell, sleep] = await waitFor(() => {
        const text = (() => {
          try {
            return Deno.readTextFileSync(pids);
          } catch {
            return "";
          }
        })();
        return text.endsWith("\n") ? text.trim().split(" ").map(Number) : null;
      }, "the command to start");
      const ours = groupAndSession(Deno.pid)!;
      // setsid(): the shell leads a session and group of its own; the background job is in it.
      deepStrictEqual(groupAndSession(shell), [shell, shell]);
      deepStrictEqual(groupAndSession(sleep), [shell, shell]);
      ok(ours[0] !== shell, "not the gateway's group");
      if (end === "cancel") abort.abort();
      const r = await running;
      deepStrictEqual([r.exitCode, r.signal, r.timedOut], [137, "SIGKILL", end === "timeout"]);
      // The background `sleep` died with the group (it is reaped by whoever adopted it).
      await waitFor(() => (sleeping(sleep) ? null : true), "the background sleep to die");
    } finally {
      abort.abort();
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("a process that left the command's group and holds its output does not hold the call", async () => {
  const marker = markedSleep(30);
  try {
    const started = performance.now();
    // setsid: out of the group the timeout kills, with the output pipes still open.
    const r = await runOnHost(`setsid ${marker} & echo started`, options({ timeoutMs: 1000 }));
    // The shell itself has exited by then; what timed out is the wait for the output's end.
    deepStrictEqual([r.timedOut, r.stdout], [true, "started\n"]);
    ok(performance.now() - started < 15_000, "the call ended at its timeout and the grace");
  } finally {
    for (const pid of hostProcessesWith(marker)) Deno.kill(pid, "SIGKILL");
  }
});
