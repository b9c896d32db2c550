/**
 * One person's live session sandboxes are capped (src/tools/session_sandboxes.ts): a live sandbox
 * outlives its turn, so an HTTP client naming a fresh session on every request left one more
 * running each time until its idle timeout (15 min by default) — the turn cap (ATTACKS.md R14)
 * bounded turns, not sandboxes. Past the cap the person's least recently used idle one stops; a
 * running one never does, and nobody else's is touched. Fake sessions stand in for sandboxes.
 */
import { assert, assertEquals } from "../assert.ts";
import { SessionSandboxes } from "../../src/tools/session_sandboxes.ts";
import { FakeSession } from "./fake_session.ts";

const POLICY = { workspace: "/nonexistent-fake", network: "none" as const };
const OPTIONS = { idleTimeoutMs: 60_000 };

async function withSessions(
  cap: number,
  test: (sessions: SessionSandboxes, started: FakeSession[]) => Promise<void>,
  onStart: (fake: FakeSession, index: number) => void = () => {},
): Promise<void> {
  const state = await Deno.makeTempDir({ prefix: "coop-session-cap-" });
  const started: FakeSession[] = [];
  const sessions = new SessionSandboxes(state, {
    start: () => {
      const fake = new FakeSession();
      onStart(fake, started.length);
      started.push(fake);
      return Promise.resolve(fake);
    },
    maxPerPerson: (user) => user === "bob" ? cap : 100,
  });
  try {
    await test(sessions, started);
  } finally {
    await sessions.stopAll();
    await Deno.remove(state, { recursive: true });
  }
}

const key = (user: string, session: string) => ({ channel: "http", user, session });

Deno.test("a fresh session per request: the person's live sandboxes stop at their cap, oldest idle first", async () => {
  await withSessions(2, async (sessions, started) => {
    await sessions.exec(key("alice", "a1"), POLICY, ["true"], OPTIONS);
    for (let i = 1; i <= 5; i++) {
      await sessions.exec(key("bob", `fresh-${i}`), POLICY, ["true"], OPTIONS);
    }
    assertEquals(started.length, 6);
    assertEquals(started.map((s) => s.alive), [true, false, false, false, true, true]);
    assertEquals(sessions.size, 3, "alice's one and bob's two");
    // Using an older one again makes it the most recent: the other goes next.
    await sessions.exec(key("bob", "fresh-4"), POLICY, ["true"], OPTIONS);
    await sessions.exec(key("bob", "fresh-6"), POLICY, ["true"], OPTIONS);
    assertEquals(started.slice(4).map((s) => s.alive), [true, false, true]);
  });
});

Deno.test("a live sandbox running a command is never stopped to make room", async () => {
  let finish!: () => void;
  const gate = new Promise<void>((resolve) => finish = resolve);
  await withSessions(1, async (sessions, started) => {
    await sessions.exec(key("bob", "idle"), POLICY, ["true"], OPTIONS);
    // The second sandbox's command runs until `finish()`.
    const long = sessions.exec(key("bob", "long"), POLICY, ["sleep"], OPTIONS);
    while (started.length < 2) await new Promise((resolve) => setTimeout(resolve, 1));
    assertEquals(started[0].alive, false, "the idle one made room");
    await sessions.exec(key("bob", "third"), POLICY, ["true"], OPTIONS);
    assert(started[1].alive, "the one running its command kept running");
    assertEquals(sessions.size, 2, "over the cap while a command runs, never by more than that");
    finish();
    await long;
  }, (fake, index) => {
    if (index === 1) fake.running = gate;
  });
});
