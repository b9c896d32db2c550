/**
 * `Gateway.reconfigure` (live config): a turn in flight finishes under the config it started
 * with; the next turn sees the new one. And routing by a sender's aliases (Signal's number and
 * uuid name one person).
 */
import { join } from "node:path";
import { commandResult } from "../fixtures/command_result.ts";
import { parseConfig } from "../../src/config/config.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { routeMessage } from "../../src/gateway/router.ts";
import { assert, assertEquals } from "../assert.ts";
import { until } from "../sandbox/harness.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { coopToml } from "../e2e/coop_toml.ts";

const format = ANTHROPIC;

Deno.test("gateway: a reload applies to the next turn; the turn in flight keeps its config", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-reconf-" }));
  let release: () => void = () => {};
  const held = new Promise<void>((resolve) => release = resolve);
  let calls = 0;
  try {
    await withScriptedServer([
      format.toolCall("c1", "bash", ['{"command":"echo hi"}']),
      format.text(["first done"]),
      format.text(["second done"]),
    ], async (server) => {
      const text = (trust: string) =>
        coopToml({ kind: "anthropic", baseUrl: server.url }).replace(
          'name = "bob"\ntrust = "full"',
          `name = "bob"\ntrust = "${trust}"`,
        ).replaceAll("{{dir}}", dir);
      const file = join(dir, "coop.toml");
      const gateway = Gateway.open(parseConfig(text("full"), file, dir), {
        executor: {
          env: { PATH: "/usr/bin:/bin" },
          // The first turn's bash call waits here while the config changes under it.
          sandbox: async () => {
            calls++;
            await held;
            return commandResult({ stdout: "sandboxed\n" });
          },
        },
      });
      try {
        const first = gateway.handle({ channel: "http", sender: "bob", text: "run it" });
        assert(await until(() => calls > 0, 20_000), "the turn never reached its tool call");
        gateway.reconfigure(parseConfig(text("familiar"), file, dir));
        release();
        const firstOutcome = await first;
        assertEquals(firstOutcome.reply, "first done");
        assertEquals(firstOutcome.tools.map((t) => [t.name, t.sandboxed]), [["bash", true]]);
        const second = await gateway.handle({ channel: "http", sender: "bob", text: "again" });
        assertEquals(second.reply, "second done");
        assertEquals(format.toolNames(server.requests[0].body).includes("bash"), true);
        assertEquals(format.toolNames(server.requests[2].body).includes("bash"), false);
        assertEquals(gateway.config.users.find((u) => u.name === "bob")?.trust, "familiar");
      } finally {
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("router: a sender's aliases match the same configured person", () => {
  const config = {
    users: [{ name: "bob", trust: "full" as const, match: ["signal:+15550001"], sandbox: {} }],
    groups: [],
    sandbox: { enabled: true },
  };
  const byUuid = routeMessage(config, {
    channel: "signal",
    sender: "5a1f0c2e-0000-4000-8000-000000000001",
    aliases: ["+15550001"],
  });
  assertEquals([byUuid.principal.name, byUuid.reason], ["bob", "matched"]);
  const stranger = routeMessage(config, { channel: "signal", sender: "+15550002", aliases: [] });
  assertEquals(stranger.principal.name, "public");
});
