/**
 * The budget section of `coop explain`: the budgets a real turn is checked against, each limit
 * beside its usage from the state database — and when explain says a budget is spent, a real
 * turn of that person is refused by that very budget (no model call: the provider's address is
 * closed); the owner is shown exempt, an unknown sender counted on their own.
 */
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { runExplain } from "../../src/cli/explain_command.ts";
import { BudgetExceededError } from "../../src/gateway/budget_gate.ts";
import type { BudgetExplanation } from "../../src/gateway/explain_budget.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { openStateDb } from "../../src/state/state_db.ts";
import { UsageStore } from "../../src/state/usage_store.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";

const CONFIG = `
[agent]
model = "scripted/test-model"
workspace = "ws"
state_dir = "state"
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob", "telegram:222"]
[users.budget]
turns_per_hour = 2
tokens_per_day = 5000
[[groups]]
name = "family"
match = ["telegram:-100"]
trust = "inner"
[groups.budget]
turns_per_hour = 10
[[providers]]
name = "scripted"
kind = "anthropic"
base_url = "http://127.0.0.1:9"
`;

async function explain(file: string, args: string[], json = true) {
  let out = "";
  const code = await runExplain([...args, "--config", file, ...(json ? ["--json"] : [])], {
    probe: () => Promise.resolve({ available: true, detail: "not probed" }),
    write: (text) => out += text,
  });
  assertEquals(code, 0, out);
  return out;
}

async function budgetOf(file: string, args: string[]): Promise<BudgetExplanation> {
  return JSON.parse(await explain(file, args)).sections.budget;
}

Deno.test("explain shows budgets and usage; a spent one refuses the real turn", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-explain-budget-" }));
  try {
    const file = join(dir, "coop.toml");
    await Deno.writeTextFile(file, CONFIG);
    // No state database yet: nothing used, nothing created by explain.
    const fresh = await budgetOf(file, ["--user", "bob"]);
    assertEquals(fresh.usage.turns_per_hour, 0);
    assertEquals(fresh.budgets[0].limits[0], {
      key: "turns_per_hour",
      limit: 2,
      used: 0,
      windowSeconds: 3600,
      spent: false,
    });
    assertEquals(exists(join(dir, "state")), false);

    // Two turns of bob (1200 tokens) and one of an unknown sender, as the gateway counts them.
    const db = openStateDb(join(dir, "state"));
    const usage = new UsageStore(db);
    for (const tokens of [500, 700]) {
      usage.addTokens(usage.beginTurn({ person: "bob", channel: "http" }), tokens);
    }
    usage.beginTurn({ person: "public:zed", channel: "http" });
    db.close();

    const bob = await budgetOf(file, ["--user", "bob"]);
    assertEquals(bob.person, "bob");
    assertEquals(bob.exempt, false);
    assertEquals([bob.usage.turns_per_hour, bob.usage.tokens_per_day], [2, 1200]);
    assertEquals(bob.budgets.map((b) => b.setting), ['[[users]] "bob" budget']);
    assertEquals(
      bob.budgets[0].limits.map((l) => [l.key, l.used, l.limit, l.spent]),
      [["turns_per_hour", 2, 2, true], ["tokens_per_day", 1200, 5000, false]],
    );
    assertMatch(bob.whenSpent, /refused before any model call/);

    // What explain says is spent is what refuses the real turn (before any model call).
    const gateway = Gateway.open(parseConfig(CONFIG, file, dir));
    let refused: unknown;
    try {
      await gateway.handle({ channel: "http", sender: "bob", text: "hi" });
    } catch (error) {
      refused = error;
    } finally {
      gateway.close();
    }
    assert(refused instanceof BudgetExceededError, `expected a budget refusal, got ${refused}`);
    const spent = bob.budgets[0].limits.find((l) => l.spent)!;
    assertEquals(
      [refused.budget.key, refused.budget.used, refused.budget.limit],
      [spent.key, spent.used, spent.limit],
    );

    // In the group: bob's budget and the group chat's, in the order the gateway checks them.
    const inGroup = await budgetOf(file, [
      "--user",
      "bob",
      "--channel",
      "telegram",
      "--group",
      "-100",
    ]);
    assertEquals(inGroup.budgets.map((b) => b.setting), [
      '[[users]] "bob" budget',
      '[[groups]] "family" budget',
    ]);
    assertEquals(inGroup.budgets[1].limits[0].used, 0);

    const owner = await budgetOf(file, ["--user", "alice"]);
    assertEquals([owner.exempt, owner.budgets.length], [true, 0]);
    const zed = await budgetOf(file, ["--channel", "http", "--sender", "zed"]);
    assertEquals([zed.person, zed.usage.turns_per_hour, zed.budgets.length], ["public:zed", 1, 0]);

    const human = await explain(file, ["--user", "bob"], false);
    assertMatch(human, /\nBudget:\n {2}used by bob: 2 turns in the last hour; 1200 tokens/);
    assertMatch(human, /\[\[users\]\] "bob" budget: turns_per_hour 2\/2 SPENT, tokens_per_day/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}
