/**
 * Budgets at the door of a turn, with a clock the test moves: the turn over a budget is refused
 * with a 429-shaped `TurnRefusedError` naming the budget and its window; windows roll; tokens and
 * sandbox seconds count as they are added; the owner is exempt unless configured; a group's
 * budget covers everyone in that chat; counters live in the database, not in memory.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseConfig } from "../../src/config/config.ts";
import { TurnRefusedError } from "../../src/errors/turn_refused.ts";
import { ConfigError } from "../../src/config/config_diagnostic.ts";
import { BudgetExceededError, BudgetGate } from "../../src/gateway/budget_gate.ts";
import { routeMessage, routeUser } from "../../src/gateway/router.ts";
import { usageReport } from "../../src/gateway/usage_report.ts";
import { migrate } from "../../src/state/state_db.ts";
import { UsageStore } from "../../src/state/usage_store.ts";

const CONFIG = `
[[users]]
name = "alice"
trust = "owner"
match = ["http:alice"]

[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
[users.budget]
turns_per_hour = 3
tokens_per_day = 1000
sandbox_seconds_per_day = 60

[[users]]
name = "olga"
trust = "owner"
match = ["http:olga"]
[users.budget]
turns_per_hour = 1

[[groups]]
name = "family"
match = ["telegram:-100"]
trust = "inner"
[groups.budget]
turns_per_hour = 2
`;

const HOUR = 3_600_000;

function setup() {
  const config = parseConfig(CONFIG, "/nonexistent/coop.toml", "/nonexistent");
  const db = new DatabaseSync(":memory:");
  migrate(db);
  const clock = { now: Date.UTC(2026, 10, 24, 9) };
  const usage = new UsageStore(db, () => clock.now);
  const gate = new BudgetGate(config, usage, () => clock.now);
  const user = (name: string) => routeUser(config.users.find((u) => u.name === name)!);
  return { config, db, clock, usage, gate, user };
}

function refusal(fn: () => unknown): BudgetExceededError {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  ok(caught instanceof BudgetExceededError, `expected a budget refusal, got ${caught}`);
  return caught;
}

Deno.test("budget: the 4th turn in an hour is refused, 429, naming the budget and window", () => {
  const { db, clock, gate, user } = setup();
  const turn = () => gate.admit({ route: user("bob"), person: "bob", channel: "http" });
  for (let i = 0; i < 3; i++) {
    turn();
    clock.now += 60_000;
  }
  const error = refusal(turn);
  ok(error instanceof TurnRefusedError);
  strictEqual(error.code, "gateway.budget_exceeded");
  strictEqual(error.httpStatus, 429);
  // The first turn leaves the window 60 minutes after it started: 57 minutes from now.
  deepStrictEqual(error.details, {
    budget: {
      scope: "user",
      name: "bob",
      key: "turns_per_hour",
      limit: 3,
      used: 3,
      window: "rolling",
      windowSeconds: 3600,
      retryAfterSeconds: 57 * 60,
      setting: '[[users]] "bob" budget.turns_per_hour',
    },
  });
  strictEqual(
    error.reply,
    "You have used up your allowance of 3 turns for the last hour, so I will not answer " +
      "this one. Please try again in about 57 minutes.",
  );
  // A refused turn does not count; the window rolls: an hour after the first, one is free.
  clock.now += 57 * 60_000 - 1;
  refusal(turn);
  clock.now += 1;
  turn();
  refusal(turn);
  db.close();
});

Deno.test("budget: tokens and sandbox seconds count as they are measured", () => {
  const { db, clock, gate, user, usage } = setup();
  const bob = { route: user("bob"), person: "bob", channel: "http" };
  const meter = gate.admit(bob);
  meter.addTokens(600);
  meter.addSandboxSeconds(20.5);
  const second = gate.admit(bob);
  second.addTokens(400); // 1000: the budget is reached, the next turn is refused
  const error = refusal(() => gate.admit(bob));
  strictEqual((error.details.budget as { key: string }).key, "tokens_per_day");
  strictEqual((error.details.budget as { used: number }).used, 1000);
  // Enough tokens leave the window when the first turn does: 24 h after it started.
  strictEqual((error.details.budget as { retryAfterSeconds: number }).retryAfterSeconds, 86_400);
  clock.now += 24 * HOUR;
  const third = gate.admit(bob);
  third.addSandboxSeconds(60);
  const cpu = refusal(() => gate.admit(bob));
  strictEqual((cpu.details.budget as { key: string }).key, "sandbox_seconds_per_day");
  strictEqual(usage.totals({ person: "bob" }, 24 * HOUR).sandboxSeconds, 60);
  db.close();
});

Deno.test("budget: a turn's meter tells when its sandbox seconds are spent, and only those", () => {
  const { db, gate, user } = setup();
  const bob = { route: user("bob"), person: "bob", channel: "http" };
  const meter = gate.admit(bob);
  meter.addTokens(1000); // the token budget is spent: not the sandbox seconds
  strictEqual(meter.sandboxBudgetSpent(), false);
  meter.addSandboxSeconds(59.5);
  strictEqual(meter.sandboxBudgetSpent(), false);
  meter.end();
  // A live session's background CPU, charged after the turn answered, spends it.
  meter.addSandboxSeconds(0.5);
  strictEqual(meter.sandboxBudgetSpent(), true);
  // The owner without a budget of their own has none to spend.
  const owner = gate.admit({ route: user("alice"), person: "alice", channel: "http" });
  owner.addSandboxSeconds(1e6);
  strictEqual(owner.sandboxBudgetSpent(), false);
  db.close();
});

Deno.test("budget: the owner is exempt unless their own entry sets a budget", () => {
  const { db, gate, user } = setup();
  for (let i = 0; i < 10; i++) {
    gate.admit({ route: user("alice"), person: "alice", channel: "http" });
  }
  gate.admit({ route: user("olga"), person: "olga", channel: "http" });
  refusal(() => gate.admit({ route: user("olga"), person: "olga", channel: "http" }));
  db.close();
});

Deno.test("budget: a group chat's budget covers everyone in it, strangers included", () => {
  const { config, db, gate, user } = setup();
  const inGroup = (sender: string) => {
    const route = routeMessage(config, { channel: "telegram", sender, group: "-100" });
    return () => gate.admit({ route, person: sender, channel: "telegram", group: "-100" });
  };
  inGroup("123")(); // a stranger (public in the group)
  gate.admit({ route: user("alice"), person: "alice", channel: "telegram", group: "-100" });
  // The owner is exempt, and their turn does not use up the group's allowance.
  const stranger = inGroup("456");
  stranger();
  const error = refusal(stranger);
  deepStrictEqual(
    [
      (error.details.budget as { scope: string }).scope,
      (error.details.budget as { name: string }).name,
    ],
    ["group", "family"],
  );
  strictEqual(
    error.reply,
    "This group has used up its allowance of 2 turns for the last hour, so I will not answer " +
      "this one. Please try again in about 60 minutes.",
  );
  // Outside the group the same people are not limited by it.
  gate.admit({ route: user("bob"), person: "bob", channel: "http" });
  db.close();
});

Deno.test("budget: the usage report shows each person against their budget", () => {
  const { config, db, gate, user, usage } = setup();
  for (let i = 0; i < 3; i++) gate.admit({ route: user("bob"), person: "bob", channel: "http" });
  gate.admit({ route: user("alice"), person: "alice", channel: "http" });
  const report = usageReport(config, usage);
  const bob = report.people.find((p) => p.name === "bob")!;
  deepStrictEqual(bob.used, { turns_per_hour: 3, tokens_per_day: 0, sandbox_seconds_per_day: 0 });
  deepStrictEqual(bob.spent, ["turns_per_hour"]);
  strictEqual(report.people.find((p) => p.name === "alice")!.exempt, true);
  deepStrictEqual(report.groups.map((g) => [g.name, g.budget]), [["family", {
    turns_per_hour: 2,
  }]]);
  db.close();
});

Deno.test("budget config: negative, fractional or unknown limits are errors naming the key", () => {
  const cases: Array<[string, RegExp]> = [
    ["turns_per_hour = -1", /budget\.turns_per_hour.*at least 0/],
    ["tokens_per_day = 1.5", /budget\.tokens_per_day.*(whole number|int)/],
    ["hours = 2", /budget.*hours/],
  ];
  for (const [bad, expected] of cases) {
    let error: unknown;
    try {
      parseConfig(
        `[[users]]\nname = "bob"\ntrust = "inner"\n[users.budget]\n${bad}\n`,
        join("/nonexistent", "coop.toml"),
        "/nonexistent",
      );
    } catch (e) {
      error = e;
    }
    ok(error instanceof ConfigError, bad);
    const text = error.diagnostics.map((d) => `${d.path}: ${d.message}`).join("\n");
    ok(expected.test(text), `${bad}: ${text}`);
  }
});

Deno.test("budget config: [pairing.budget] is checked like a user's, naming its key", () => {
  let error: unknown;
  try {
    parseConfig(
      "[pairing.budget]\nturns_per_hour = -1\n",
      "/nonexistent/coop.toml",
      "/nonexistent",
    );
  } catch (e) {
    error = e;
  }
  ok(error instanceof ConfigError);
  const text = error.diagnostics.map((d) => `${d.path}: ${d.message}`).join("\n");
  ok(/pairing\.budget\.turns_per_hour.*at least 0/.test(text), text);
  const config = parseConfig(
    "[pairing.budget]\nsandbox_seconds_per_day = 60\n",
    "/nonexistent/coop.toml",
    "/nonexistent",
  );
  deepStrictEqual(config.pairing.budget, { sandbox_seconds_per_day: 60 });
});
