/**
 * A live session's background CPU is charged while it runs (src/tools/session_sandboxes.ts), not
 * only when the session ends: after each command and every `chargeEveryMs` while none runs —
 * never while one runs (its own CPU comes with its result) and never twice (the end charges what
 * is left). A fake session stands in for the sandbox: what its cgroup "counted" is set by hand.
 * The same against a real cgroup: tests/sandbox/cgroup_v2_test.ts.
 */
import { assert, assertEquals } from "../assert.ts";
import { SessionSandboxes } from "../../src/tools/session_sandboxes.ts";
import { FakeSession } from "./fake_session.ts";

const key = { channel: "http", user: "bob", session: "s1" };
const POLICY = { workspace: "/nonexistent-fake", network: "none" as const };
const CHARGE_EVERY_MS = 20;

async function withSessions(
  test: (sessions: SessionSandboxes, fake: FakeSession, charges: number[]) => Promise<void>,
): Promise<void> {
  const state = await Deno.makeTempDir({ prefix: "coop-session-charge-" });
  const fake = new FakeSession();
  const sessions = new SessionSandboxes(state, {
    start: () => Promise.resolve(fake),
    chargeEveryMs: CHARGE_EVERY_MS,
  });
  const charges: number[] = [];
  try {
    await test(sessions, fake, charges);
  } finally {
    await sessions.stopAll();
    await Deno.remove(state, { recursive: true });
  }
}

function run(
  sessions: SessionSandboxes,
  charges: number[],
  onCpu?: (s: number) => void,
  budgetSpent?: () => boolean,
) {
  return sessions.exec(key, POLICY, ["true"], {
    idleTimeoutMs: 60_000,
    onCpuSeconds: onCpu ?? ((seconds) => charges.push(seconds)),
    budgetSpent,
  });
}

const sum = (charges: number[]) => Math.round(charges.reduce((a, b) => a + b, 0) * 1000);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("background CPU is charged after the next command, before the session ends", async () => {
  await withSessions(async (sessions, fake, charges) => {
    await run(sessions, charges);
    fake.counted = 400; // a job the first command left in the background spun 0.4 s
    await run(sessions, charges);
    // The command's own 1 ms comes with its result (sandbox_placement.ts), not through here.
    assertEquals(sum(charges), 400);
    assert(fake.alive);
    fake.finalMs = 450; // 50 ms more by the end
    await sessions.stopAll();
    assertEquals(sum(charges), 450, "the end charges only what was not charged yet");
  });
});

Deno.test("an idle session's background CPU is charged every chargeEveryMs", async () => {
  await withSessions(async (sessions, fake, charges) => {
    await run(sessions, charges);
    fake.counted = 250;
    // A timer's pace on a loaded machine: waited for, not assumed.
    const until = Date.now() + 10_000;
    while (sum(charges) < 250 && Date.now() < until) await pause(CHARGE_EVERY_MS);
    assertEquals(sum(charges), 250, "charged with no command and the session still live");
    assert(fake.alive);
    fake.counted = 255; // under the least charge: waits for more
    await pause(CHARGE_EVERY_MS * 3);
    assertEquals(sum(charges), 250);
  });
});

Deno.test("nothing is charged from the count while a command runs", async () => {
  await withSessions(async (sessions, fake, charges) => {
    await run(sessions, charges);
    let finish!: () => void;
    fake.running = new Promise((resolve) => finish = resolve);
    const long = run(sessions, charges);
    fake.counted = 300; // the running command's own CPU, in the count until it reports
    await pause(CHARGE_EVERY_MS * 5);
    assertEquals(charges, [], "a running command's CPU is not background CPU");
    fake.running = null;
    fake.counted = 0; // it reported its 300 ms with its result: nothing unclaimed is left
    finish();
    await long;
    assertEquals(charges, []);
  });
});

Deno.test("without a cgroup count, everything is charged at the end, once", async () => {
  await withSessions(async (sessions, fake, charges) => {
    fake.counted = null;
    await run(sessions, charges);
    await pause(CHARGE_EVERY_MS * 3);
    assertEquals(charges, []);
    fake.finalMs = 700;
    await sessions.stopAll();
    assertEquals(sum(charges), 700);
  });
});

Deno.test("a charge that throws leaves the command's result alone", async () => {
  await withSessions(async (sessions, fake, charges) => {
    await run(sessions, charges);
    fake.counted = 100;
    const r = await run(sessions, charges, () => {
      throw new Error("disk full");
    });
    assertEquals(r.exitCode, 0);
  });
});

Deno.test("background CPU that spends the budget stops the session", async () => {
  await withSessions(async (sessions, fake, charges) => {
    const limitMs = 300;
    const spent = () => sum(charges) >= limitMs;
    await run(sessions, charges, undefined, spent);
    fake.counted = 200;
    await run(sessions, charges, undefined, spent);
    assert(fake.alive, "under the budget: it runs on");
    assertEquals(sessions.size, 1);
    fake.counted = 350; // the job spins on in the background, no command needed
    const until = Date.now() + 10_000;
    while (fake.alive && Date.now() < until) await pause(CHARGE_EVERY_MS);
    assert(!fake.alive, "the budget is spent: the session and its job are stopped");
    assertEquals(sessions.size, 0);
    assertEquals(sum(charges), 350);
  });
});
