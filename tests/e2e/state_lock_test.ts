/**
 * One gateway per state directory: a second `coop start` on it refuses, naming the first one's
 * pid; `coop chat` still runs beside it; once the first stops, the directory is free again.
 */
import { runCommand } from "../fixtures/run_command.ts";
import { assertEquals, assertMatch, assertNotIncludes, assertThrows } from "../assert.ts";
import { lockStateDir, StateLockedError } from "../../src/state/state_lock.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import {
  coopArgv,
  type CoopHome,
  makeCoopHome,
  startGateway,
  stopGateway,
} from "./gateway_process.ts";

function coop(home: CoopHome, args: string[], stdin = "") {
  const [cmd, ...rest] = coopArgv(...args);
  return runCommand(cmd, rest, { stdin, env: home.env(), clearEnv: true });
}

Deno.test("lockStateDir: a second holder is refused with the first one's pid, until release", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-lock-" });
  try {
    const lock = lockStateDir(dir);
    const error = assertThrows(() => lockStateDir(dir), StateLockedError);
    assertEquals(error.pid, Deno.pid);
    assertMatch(error.message, new RegExp(`\\(pid ${Deno.pid}\\).*${dir}`));
    lock.release();
    lock.release();
    lockStateDir(dir).release();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "e2e: a second coop start on the same state_dir refuses, naming the first one's pid",
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const extra = "[sandbox]\nenabled = false\n" + httpChannelToml(["bob"]);
    const home = await makeCoopHome(
      coopToml({ kind: "anthropic", baseUrl: "http://127.0.0.1:1", extra }),
    );
    try {
      const first = await startGateway(home);
      try {
        const second = await coop(home, ["start", "--config", home.config]);
        assertEquals(second.code, 1, second.stderr);
        assertMatch(
          second.stderr,
          new RegExp(
            `coop: another coop start \\(pid ${first.child.pid}\\) is running on the state ` +
              `directory ${home.stateDir}; stop it first \\(kill ${first.child.pid}\\)`,
          ),
        );
        assertNotIncludes(second.stderr, "http channel on");
        assertNotIncludes(second.stderr, "    at ");

        // The terminal REPL runs no cron and keeps its own sessions: it may run beside.
        const chat = await coop(home, ["chat", "--config", home.config], "/quit\n");
        assertEquals(chat.code, 0, chat.stderr);

        first.child.kill("SIGTERM");
        assertEquals((await first.status).code, 0, first.stderr());
      } finally {
        await stopGateway(first);
      }
      // Released at exit: the next gateway starts.
      const third = await startGateway(home);
      third.child.kill("SIGTERM");
      assertEquals((await third.status).code, 0, third.stderr());
    } finally {
      await Deno.remove(home.dir, { recursive: true });
    }
  },
});
