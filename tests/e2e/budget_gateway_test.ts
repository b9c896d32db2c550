/**
 * Budgets end to end through `coop start`'s HTTP channel: bob has `turns_per_hour = 3`; his 4th
 * turn is answered 429 with the budget named and never reaches the model server; `coop usage`
 * (run beside the gateway) shows 3 turns, the providers' tokens and the measured sandbox time;
 * after the gateway is killed and started again, it still does, and the turn is still refused.
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC, OPENAI } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { runCommand } from "../fixtures/run_command.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import {
  coopArgv,
  type CoopHome,
  makeCoopHome,
  postMessage,
  startGateway,
  stopGateway,
} from "./gateway_process.ts";

const TOKENS = { BOB_TOKEN: "bob-secret-1" };

/** Burns a little CPU in the sandbox: the turn's sandbox seconds must be measured, not zero. */
const SPIN = "i=0; while [ $i -lt 100000 ]; do i=$((i+1)); done; echo spun";

interface UsageLine {
  name: string;
  used: Record<string, number>;
  budget: Record<string, number>;
  spent: string[];
}

async function coopUsage(home: CoopHome): Promise<UsageLine> {
  const [cmd, ...args] = coopArgv("usage", "--json", "--config", home.config);
  const run = await runCommand(cmd, args, { env: home.env(), clearEnv: true });
  assertEquals(run.code, 0, run.stderr);
  const report = JSON.parse(run.stdout) as { people: UsageLine[] };
  return report.people.find((p) => p.name === "bob")!;
}

for (const format of [ANTHROPIC, OPENAI]) {
  sandboxTest(
    `e2e ${format.kind}: turns_per_hour = 3 refuses the 4th turn, across a restart`,
    async () => {
      const script = [
        format.toolCall("call_1", "bash", [JSON.stringify({ command: SPIN })]),
        format.text(["one"]),
        format.text(["two"]),
        format.text(["three"]),
      ];
      await withScriptedServer(script, async (server) => {
        const home = await makeCoopHome(coopToml({
          kind: format.kind,
          baseUrl: format.baseUrl(server.url),
          extra: httpChannelToml(["bob"]),
          bob: "[users.budget]\nturns_per_hour = 3\n",
        }));
        let gateway = await startGateway(home, TOKENS);
        try {
          for (const reply of ["one", "two", "three"]) {
            const ok = await postMessage(gateway.url, TOKENS.BOB_TOKEN, { text: "hi" });
            assertEquals(ok.status, 200, JSON.stringify(ok.json));
            assertEquals(ok.json.reply, reply);
          }
          assertEquals(server.requests.length, 4);

          const refused = await postMessage(gateway.url, TOKENS.BOB_TOKEN, { text: "again" });
          assertEquals(refused.status, 429, JSON.stringify(refused.json));
          const error = refused.json.error as Record<string, unknown>;
          // The HTTP API drops the `gateway.` prefix of codes; the details name the budget.
          assertEquals(error.code, "budget_exceeded");
          assertMatch(String(error.message), /\[\[users\]\] "bob" budget\.turns_per_hour = 3/);
          const budget = error.budget as Record<string, unknown>;
          assertEquals(budget.key, "turns_per_hour");
          assertEquals(budget.limit, 3);
          assertEquals(budget.used, 3);
          assertEquals(budget.window, "rolling");
          assertEquals(budget.windowSeconds, 3600);
          assertEquals(server.requests.length, 4, "no request reached the model server");
          assertMatch(gateway.stderr(), /gateway\.budget_exceeded/);

          // Beside the running gateway: 3 turns, 19 tokens per model response (12 in + 7 out, as
          // the scripted server reports them) × 4 responses, and the bash command's CPU time.
          const live = await coopUsage(home);
          assertEquals(live.used.turns_per_hour, 3);
          assertEquals(live.used.tokens_per_day, 4 * 19);
          assert(live.used.sandbox_seconds_per_day > 0, JSON.stringify(live));
          assertEquals(live.budget, { turns_per_hour: 3 });
          assertEquals(live.spent, ["turns_per_hour"]);

          // Killed outright, then started again: the counters were in the database all along.
          await stopGateway(gateway);
          const afterRestart = await coopUsage(home);
          assertEquals(afterRestart.used, live.used);
          gateway = await startGateway(home, TOKENS);
          const still = await postMessage(gateway.url, TOKENS.BOB_TOKEN, { text: "and now?" });
          assertEquals(still.status, 429, JSON.stringify(still.json));
          assertEquals(server.requests.length, 4);
          assertEquals((await coopUsage(home)).used.turns_per_hour, 3);
        } finally {
          await stopGateway(gateway);
          await Deno.remove(home.dir, { recursive: true });
        }
      });
    },
  );
}
