/**
 * `coop start` end to end: a model that sends tool arguments that are not JSON no longer fails
 * the HTTP request with 502; it is answered with a tool error and the reply still arrives.
 */
import { assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC, OPENAI } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import { makeCoopHome, postMessage, startGateway, stopGateway } from "./gateway_process.ts";

for (const format of [ANTHROPIC, OPENAI]) {
  sandboxTest(`e2e ${format.kind}: tool arguments that are not JSON: 200, not 502`, async () => {
    const script = [
      format.toolCall("call_1", "bash", ['{"command": "ls', " -la"]),
      format.text(["Sorry, here it is properly."]),
    ];
    await withScriptedServer(script, async (server) => {
      const home = await makeCoopHome(
        coopToml({
          kind: format.kind,
          baseUrl: format.baseUrl(server.url),
          extra: httpChannelToml(["bob"]),
        }),
      );
      const gateway = await startGateway(home, { BOB_TOKEN: "bob-secret" });
      try {
        const bob = await postMessage(gateway.url, "bob-secret", { text: "list files" });
        assertEquals(bob.status, 200, JSON.stringify(bob.json));
        assertEquals(bob.json.reply, "Sorry, here it is properly.");
        assertEquals(bob.json.tools, [{ name: "bash", sandboxed: false, exitCode: null }]);
        const answer = JSON.stringify(format.messages(server.requests[1].body).at(-1));
        assertMatch(answer, /invalid JSON in tool arguments: /);
      } finally {
        await stopGateway(gateway);
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  });
}
