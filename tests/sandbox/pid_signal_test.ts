/**
 * `signalIfSame` (what `coop sandbox stop` signals a live session's init with): the signal goes
 * through a pidfd, only while the caller's check says the pid is still the process it knows;
 * real-time signals (the init's `COOP_SIG_END`, 64) are sent as numbers, with no kill(1).
 */
import { assert, assertEquals } from "../assert.ts";
import { loadTrampoline } from "../../src/sandbox/ffi.ts";
import { signalIfSame } from "../../src/sandbox/pid_signal.ts";
import { END_SIGNAL } from "../../src/sandbox/protocol.ts";

function sleeper(script = "sleep 30"): Deno.ChildProcess {
  return new Deno.Command("sh", { args: ["-c", script], stdout: "piped" }).spawn();
}

Deno.test("signalIfSame: a process that is no longer the known one is not signalled", async () => {
  const lib = await loadTrampoline();
  const child = sleeper();
  try {
    assertEquals(signalIfSame(lib, child.pid, () => false, 9), false);
    const race = await Promise.race([
      child.status.then(() => "ended"),
      new Promise((r) => setTimeout(() => r("alive"), 200)),
    ]);
    assertEquals(race, "alive", "the check failed, so no signal was sent");
    assertEquals(signalIfSame(lib, child.pid, () => true, 9), true);
    assertEquals((await child.status).signal, "SIGKILL");
  } finally {
    await child.stdout.cancel();
  }
});

Deno.test("signalIfSame: a real-time signal (the init's end signal) is delivered by number", async () => {
  const lib = await loadTrampoline();
  // bash names signal 64 by number; the trap says it arrived.
  const child = new Deno.Command("bash", {
    args: [
      "-c",
      `trap 'kill $!; echo got-${END_SIGNAL}; exit 0' ${END_SIGNAL}; echo ready; ` +
      "sleep 30 >/dev/null & wait",
    ],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let out = "";
  while (!out.includes("ready\n")) out += (await reader.read()).value ?? "";
  assert(signalIfSame(lib, child.pid, () => true, END_SIGNAL));
  for (let r = await reader.read(); !r.done; r = await reader.read()) out += r.value;
  assertEquals(out, `ready\ngot-${END_SIGNAL}\n`);
  assertEquals((await child.status).code, 0);
});

Deno.test("signalIfSame: a pid that no longer exists is not signalled", async () => {
  const lib = await loadTrampoline();
  const child = sleeper("exit 0");
  await child.status;
  await child.stdout.cancel();
  let checked = false;
  assertEquals(signalIfSame(lib, child.pid, () => checked = true, 9), false);
  assertEquals(checked, false, "no pidfd, so nothing to check");
});
