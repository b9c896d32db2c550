/**
 * The gateway's registry of live session sandboxes (src/tools/session_sandboxes.ts), with the
 * real sandbox: one per chat session, replaced when its policy changes, stopped when idle and
 * on stopAll — and its file under `<state_dir>/sandboxes/` follows.
 */
import { assert, assertEquals, assertNotEquals } from "../assert.ts";
import { SessionSandboxes } from "../../src/tools/session_sandboxes.ts";
import { listLiveSandboxes, liveSandboxDir } from "../../src/tools/live_sandbox_files.ts";
import { sandboxTest, withWorkspace } from "../sandbox/harness.ts";
import { removeTree } from "../sandbox/environment_fixture.ts";
import { environmentWritesSettled } from "../../src/sandbox/mod.ts";

function ended(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

const key = { channel: "http", user: "bob", session: "s1" };
const PID1 = ["sh", "-c", "echo $$ $PPID; cat /proc/1/stat | cut -d' ' -f22"];

sandboxTest("one sandbox per session; a changed policy replaces it; idle ends it", async () => {
  await withWorkspace(async (workspace) => {
    const state = await Deno.makeTempDir({ prefix: "coop-session-state-" });
    const sessions = new SessionSandboxes(state);
    try {
      const policy = { workspace, network: "none" as const };
      const options = { idleTimeoutMs: 60_000 };
      // Returns once the background job runs `sleep` (comm), not just after its fork: on a busy
      // machine the next command's pgrep could otherwise come before the child's execve.
      const background = 'sleep 1000 & until [ "$(cat /proc/$!/comm)" = sleep ]; do :; done';
      await sessions.exec(key, policy, ["sh", "-c", background], options);
      const [first] = listLiveSandboxes(state);
      assertEquals([first.user, first.session], ["bob", "http:s1"]);
      const again = await sessions.exec(key, policy, ["pgrep", "-x", "sleep"], options);
      assertEquals(again.exitCode, 0, "the same sandbox: the sleep is still there");
      assertEquals(listLiveSandboxes(state).map((s) => s.id), [first.id]);

      // A reload that changes the policy: the old sandbox is stopped, a new one made.
      const changed = { ...policy, tmpSizeBytes: 32 * 2 ** 20 };
      const fresh = await sessions.exec(key, changed, ["pgrep", "-x", "sleep"], options);
      assertEquals(fresh.exitCode, 1, "a new sandbox: no sleep in it");
      assert(ended(first.pid), "the old sandbox is gone");
      const [second] = listLiveSandboxes(state);
      assertNotEquals(second.id, first.id);

      // Idle: no command for idleTimeoutMs stops it, and its file goes.
      await sessions.exec(key, changed, ["true"], { idleTimeoutMs: 200 });
      assert(await waitFor(() => ended(second.pid), 3000), "idle sandbox left running");
      assert(await waitFor(() => listLiveSandboxes(state).length === 0, 1000));
      assertEquals(sessions.size, 0);

      await sessions.exec(key, policy, PID1, options);
      await sessions.exec({ ...key, session: "s2" }, policy, PID1, options);
      const pids = listLiveSandboxes(state).map((s) => s.pid);
      assertEquals(pids.length, 2);
      await sessions.stopAll();
      assert(pids.every(ended), "stopAll leaves none");
      assertEquals(listLiveSandboxes(state), []);
    } finally {
      await sessions.stopAll();
      await Deno.remove(state, { recursive: true });
    }
  });
});

sandboxTest("a stale file (its init gone) is ignored and removed", async () => {
  const state = await Deno.makeTempDir({ prefix: "coop-session-state-" });
  try {
    await Deno.mkdir(`${state}/sandboxes`);
    const stale = {
      id: "deadbeef",
      pid: 1,
      pidStart: "not-the-start-time",
      user: "bob",
      session: "http:x",
      startedAt: new Date().toISOString(),
      gatewayPid: 1,
    };
    await Deno.writeTextFile(`${state}/sandboxes/deadbeef.json`, JSON.stringify(stale));
    assertEquals(listLiveSandboxes(state), []);
    assertEquals([...Deno.readDirSync(`${state}/sandboxes`)], []);
  } finally {
    await Deno.remove(state, { recursive: true });
  }
});

sandboxTest(
  "one live sandbox per upper layer: another session of that person displaces it",
  async () => {
    await withWorkspace(async (workspace) => {
      const state = await Deno.makeTempDir({ prefix: "coop-session-state-" });
      const layers = await Deno.makeTempDir({ prefix: "coop-session-upper-" });
      await Deno.chmod(layers, 0o711); // a root invoker's sandbox uid must reach the upper
      const sessions = new SessionSandboxes(state);
      try {
        const rootfs = { lower: "host", upper: `${layers}/upper`, work: `${layers}/work` };
        const policy = { workspace, network: "none" as const, rootfs };
        const options = { idleTimeoutMs: 60_000 };
        // Returns once the background job runs `sleep` (comm), not just after its fork: on a busy
        // machine the next command's pgrep could otherwise come before the child's execve.
        const background = 'sleep 1000 & until [ "$(cat /proc/$!/comm)" = sleep ]; do :; done';
        await sessions.exec(key, policy, ["sh", "-c", background], options);
        const [first] = listLiveSandboxes(state);
        const other = { ...key, session: "s2" };
        const result = await sessions.exec(other, policy, ["pgrep", "-x", "sleep"], options);
        assertEquals(result.exitCode, 1, "s2 has its own sandbox");
        assert(ended(first.pid), "s1's sandbox, on the same upper, was stopped first");
        assertEquals(listLiveSandboxes(state).map((s) => s.session), ["http:s2"]);
        // Another upper (another person) is not displaced.
        const carol = {
          ...policy,
          rootfs: { ...rootfs, upper: `${layers}/c-up`, work: `${layers}/c-wk` },
        };
        await sessions.exec({ ...key, user: "carol" }, carol, ["true"], options);
        assertEquals(listLiveSandboxes(state).length, 2);
      } finally {
        await sessions.stopAll();
        await Deno.remove(state, { recursive: true });
        // The pool's refill must end before the tree goes; overlayfs left work/work mode 000.
        await environmentWritesSettled();
        await removeTree(layers);
      }
    });
  },
);

/** Runs `fn` with a registry over a fresh state directory and workspace; stops all after. */
async function withSessions(
  fn: (sessions: SessionSandboxes, state: string, workspace: string) => Promise<void>,
  prepareState: (state: string) => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  await withWorkspace(async (workspace) => {
    const state = await Deno.makeTempDir({ prefix: "coop-session-state-" });
    await prepareState(state);
    const sessions = new SessionSandboxes(state);
    try {
      await fn(sessions, state, workspace);
    } finally {
      await sessions.stopAll();
      await Deno.remove(state, { recursive: true });
    }
  });
}

const LIVE = { idleTimeoutMs: 60_000 };

sandboxTest(
  "a state directory that cannot list a live sandbox leaves it unlisted, the gateway up",
  async () => {
    // A file where the listings' directory goes (as a full or read-only disk would): every
    // listing fails. An unhandled rejection here would fail this test (and end a gateway).
    const unwritable = (state: string) => Deno.writeTextFile(liveSandboxDir(state), "");
    await withSessions(async (sessions, _state, workspace) => {
      const policy = { workspace, network: "none" as const };
      const first = await sessions.exec(key, policy, ["echo", "works"], LIVE);
      assertEquals([first.exitCode, first.stdout], [0, "works\n"]);
      assertEquals((await sessions.exec(key, policy, ["true"], LIVE)).exitCode, 0);
      assertEquals(sessions.size, 1);
      await sessions.stop(key);
      assertEquals(sessions.size, 0);
    }, unwritable);
  },
);

sandboxTest("two calls of one session at once share one sandbox; stopAll leaves none", async () => {
  await withSessions(async (sessions, state, workspace) => {
    const policy = { workspace, network: "none" as const };
    // Both pass the lookup before either has started one, unless they take turns.
    const results = await Promise.all([
      sessions.exec(key, policy, ["true"], LIVE),
      sessions.exec(key, policy, ["true"], LIVE),
    ]);
    assertEquals(results.map((r) => r.exitCode), [0, 0]);
    const live = listLiveSandboxes(state);
    assertEquals(live.length, 1, "one sandbox for the session");
    await sessions.stopAll();
    assert(live.every((s) => ended(s.pid)), "stopAll leaves none");
    assertEquals(listLiveSandboxes(state), []);
  });
});

sandboxTest("a second stop of one session resolves only once the sandbox is gone", async () => {
  await withSessions(async (sessions, state, workspace) => {
    await sessions.exec(key, { workspace, network: "none" }, ["true"], LIVE);
    const [live] = listLiveSandboxes(state);
    // As when /clear comes while an idle or reload stop of the same session runs.
    const first = sessions.stop(key);
    await sessions.stop(key);
    assert(ended(live.pid), "the second stop returned with the sandbox still there");
    await first;
  });
});
