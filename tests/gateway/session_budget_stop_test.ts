/**
 * A live session sandbox whose background CPU spends its person's `sandbox_seconds_per_day` is
 * stopped, through the gateway's own wiring (the turn's meter, the executor, the registry): a job
 * left running behind a session is charged while it runs and ended when the budget is spent,
 * and the person's next turn is refused at the door. A fake session stands in for the sandbox
 * (its cgroup's count set by hand); the same charge against a real cgroup is in
 * tests/sandbox/cgroup_v2_test.ts.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { coopToml } from "../e2e/coop_toml.ts";
import { FakeSession } from "../tools/fake_session.ts";
import { parseConfig } from "../../src/config/config.ts";
import { BudgetExceededError } from "../../src/gateway/budget_gate.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { openStateDb } from "../../src/state/state_db.ts";
import { UsageStore } from "../../src/state/usage_store.ts";
import { SessionSandboxes } from "../../src/tools/session_sandboxes.ts";
import { until } from "../sandbox/harness.ts";

const BOB = `[users.sandbox]\nlifetime = "session"\nidle_timeout = "10m"\n` +
  `[users.budget]\nsandbox_seconds_per_day = 2\n`;
const DAY_MS = 24 * 3600 * 1000;

Deno.test("a live session whose background CPU spends the budget is stopped", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-session-budget-" }));
  const script = [
    format.toolCall("c1", "bash", [JSON.stringify({ command: "spin &" })]),
    format.text(["started"]),
    format.text(["never: refused at the door"]),
  ];
  try {
    await withScriptedServer(script, async (server) => {
      const text = coopToml({ kind: "anthropic", baseUrl: server.url, bob: BOB })
        .replaceAll("{{dir}}", dir);
      const config = parseConfig(text, join(dir, "coop.toml"), dir);
      const db = openStateDb(config.agent.stateDir);
      const fake = new FakeSession();
      const sessionSandboxes = new SessionSandboxes(config.agent.stateDir, {
        start: () => Promise.resolve(fake),
        chargeEveryMs: 20,
      });
      const gateway = Gateway.open(config, {
        db,
        sessionSandboxes,
        executor: { sandboxGate: () => Promise.resolve(null) },
      });
      const usage = new UsageStore(db);
      const spent = () => usage.totals({ person: "bob" }, DAY_MS).sandboxSeconds;
      try {
        const first = await gateway.handle({ channel: "http", sender: "bob", text: "spin" });
        assertEquals(first.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        fake.counted = 1500; // the job's first 1.5 s: charged, under the budget
        assert(await until(() => spent() >= 1.5, 10_000), `charged ${spent()} s`);
        assert(fake.alive, "under the budget, the session runs on");
        fake.counted = 2500; // 2.5 s: the budget is spent while nobody sends a turn
        assert(await until(() => !fake.alive, 10_000), "the spent budget did not stop the session");
        assertEquals(gateway.sessionSandboxes.size, 0);
        assert(spent() >= 2.5 && spent() < 2.6, `charged ${spent()} s`);
        const refused = await assertRejects(
          () => gateway.handle({ channel: "http", sender: "bob", text: "again" }),
          BudgetExceededError,
        );
        assertEquals((refused.details.budget as { key: string }).key, "sandbox_seconds_per_day");
      } finally {
        await gateway.drain();
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
