/**
 * `runCli` (the macOS backends' process runner): a command killed at its timeout ends the call,
 * also when something it started left its process group and holds the output pipes.
 */
import { assert, assertEquals } from "../../assert.ts";
import { runCli } from "../../../src/sandbox/cli_process.ts";
import { hostProcessesWith, markedSleep } from "../harness.ts";

const ENV = { PATH: "/usr/bin:/bin" };

Deno.test("runCli: output held by a process outside the killed group does not hold the call", async () => {
  const marker = markedSleep(30);
  try {
    const started = performance.now();
    const r = await runCli("/bin/sh", ["-c", `setsid ${marker} & echo started`], {
      timeoutMs: 1000,
      env: ENV,
    });
    assertEquals([r.timedOut, r.stdout], [true, "started\n"]);
    assert(performance.now() - started < 15_000, "the call ended at its timeout and the grace");
  } finally {
    for (const pid of hostProcessesWith(marker)) Deno.kill(pid, "SIGKILL");
  }
});

Deno.test("runCli: a command that ends on its own keeps all its output", async () => {
  const r = await runCli("/bin/sh", ["-c", "(sleep 0.2; echo late) & echo early"], { env: ENV });
  assertEquals([r.exitCode, r.timedOut, r.stdout], [0, false, "early\nlate\n"]);
});
