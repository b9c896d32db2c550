/**
 * `coop start` end to end: a scripted provider on loopback, the real HTTP channel, the real
 * sandbox. Bob's bash runs sandboxed; Carol is offered no bash; an unknown token gets 401; a
 * public sender gets no tools.
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC, OPENAI } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import { makeCoopHome, postMessage, startGateway, stopGateway } from "./gateway_process.ts";

const TOKENS = { BOB_TOKEN: "bob-secret-1", CAROL_TOKEN: "carol-secret-2", DAVE_TOKEN: "dave-3" };

function config(kind: string, baseUrl: string): string {
  return coopToml({ kind, baseUrl, extra: httpChannelToml(["bob", "carol", "dave"]) });
}

const SHADOW = "cat /etc/shadow; ls /home; id";

for (const format of [ANTHROPIC, OPENAI]) {
  sandboxTest(
    `e2e ${format.kind}: bob over HTTP runs bash in the sandbox; carol no bash; 401; public no tools`,
    async () => {
      const script = [
        format.toolCall("call_1", "bash", [JSON.stringify({ command: SHADOW })]),
        format.text(["Done: ", "the sandbox answered."]),
        format.toolCall("call_2", "bash", ['{"command":"id"}']),
        format.text(["I cannot run commands for you."]),
        format.text(["Hello, stranger."]),
      ];
      await withScriptedServer(script, async (server) => {
        const home = await makeCoopHome(config(format.kind, format.baseUrl(server.url)));
        const gateway = await startGateway(home, TOKENS);
        try {
          // Bob (full): the model asks for bash; it runs in the sandbox.
          const bob = await postMessage(gateway.url, TOKENS.BOB_TOKEN, { text: "show me" });
          assertEquals(bob.status, 200, JSON.stringify(bob.json));
          assertEquals(bob.json.reply, "Done: the sandbox answered.");
          assertEquals(bob.json.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
          assertMatch(String(bob.json.session), /^[A-Za-z0-9_-]{1,64}$/);
          assert(format.toolNames(server.requests[0].body).includes("bash"), "bob is offered bash");
          const result = JSON.stringify(format.messages(server.requests[1].body).at(-1));
          assertMatch(result, /\/etc\/shadow: No such file or directory/);
          assertMatch(result, /\/home.*No such file or directory/);
          assertMatch(result, /uid=0\(root\) gid=0\(root\)/);
          assert(!result.includes("root:"), "no shadow entry leaked");

          // Carol (familiar): not offered bash; a bash call anyway is refused, never run.
          const carol = await postMessage(gateway.url, TOKENS.CAROL_TOKEN, { text: "run id" });
          assertEquals(carol.status, 200, JSON.stringify(carol.json));
          assertEquals(format.toolNames(server.requests[2].body), [
            "read_file",
            "send_file",
            "memory_search",
            "memory_write",
            "memory_get",
            "memory_forget",
          ]);
          assertEquals(carol.json.tools, [{ name: "bash", sandboxed: false, exitCode: null }]);
          const refusal = JSON.stringify(format.messages(server.requests[3].body).at(-1));
          assertMatch(refusal, /not available in this conversation/);

          // An unknown token: 401, and the provider never hears of it.
          const before = server.requests.length;
          const stranger = await postMessage(gateway.url, "not-a-token", { text: "hi" });
          assertEquals(stranger.status, 401);
          assertEquals((stranger.json.error as { code: string }).code, "unauthorized");
          const none = await postMessage(gateway.url, null, { text: "hi" });
          assertEquals(none.status, 401);
          assertEquals(server.requests.length, before);

          // Dave has a token but no [[users]] entry: public, offered no tools at all.
          const dave = await postMessage(gateway.url, TOKENS.DAVE_TOKEN, { text: "hello" });
          assertEquals(dave.status, 200, JSON.stringify(dave.json));
          assertEquals(dave.json.reply, "Hello, stranger.");
          assertEquals(format.toolNames(server.requests[4].body), []);
          assertEquals(dave.json.tools, []);
        } finally {
          await stopGateway(gateway);
          await Deno.remove(home.dir, { recursive: true });
        }
      });
    },
  );
}
