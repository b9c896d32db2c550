/**
 * `coop start` across crashes and shutdowns: a SIGKILL mid-turn loses nothing acknowledged, and
 * SIGTERM drains (the running sandbox is killed, the caller told, the process exits 0).
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { hostProcessesWith, markedSleep, sandboxTest } from "../sandbox/harness.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import {
  type CoopHome,
  makeCoopHome,
  postMessage,
  sessionHistory,
  startGateway,
  stopGateway,
  until,
} from "./gateway_process.ts";

const BOB = { BOB_TOKEN: "bob-secret" };
const format = ANTHROPIC;

function config(baseUrl: string): string {
  return coopToml({ kind: "anthropic", baseUrl, extra: httpChannelToml(["bob"]) });
}

/** Rewrites the provider address (each gateway run talks to a fresh scripted server). */
async function pointAt(home: CoopHome, serverUrl: string): Promise<void> {
  const text = await Deno.readTextFile(home.config);
  await Deno.writeTextFile(
    home.config,
    text.replace(/base_url = ".*"/, `base_url = "${serverUrl}"`),
  );
}

sandboxTest(
  "e2e: SIGKILL mid-turn, restart: the session up to the last acknowledged message is intact",
  async () => {
    const home = await makeCoopHome(config("http://127.0.0.1:1"));
    try {
      let session = "";
      // Run 1: one acknowledged exchange, then a turn the provider never finishes; kill -9.
      await withScriptedServer(
        [format.text(["first ", "reply"]), format.hanging("half of a second rep")],
        async (server) => {
          await pointAt(home, server.url);
          const gateway = await startGateway(home, BOB);
          try {
            const first = await postMessage(gateway.url, BOB.BOB_TOKEN, { text: "first message" });
            assertEquals(first.status, 200);
            assertEquals(first.json.reply, "first reply");
            session = String(first.json.session);
            const pending = postMessage(gateway.url, BOB.BOB_TOKEN, {
              text: "second message",
              session,
            }).catch((error) => error);
            await until(
              "the second turn to reach the provider",
              () => server.requests.length === 2,
            );
            gateway.child.kill("SIGKILL");
            assertEquals((await gateway.status).signal, "SIGKILL");
            assert((await pending) instanceof Error, "the unacknowledged request failed");
          } finally {
            await stopGateway(gateway);
          }
        },
      );
      // Run 2: the same session continues with everything that was committed.
      await withScriptedServer([format.text(["third reply"])], async (server) => {
        await pointAt(home, server.url);
        const gateway = await startGateway(home, BOB);
        try {
          const third = await postMessage(gateway.url, BOB.BOB_TOKEN, { text: "third", session });
          assertEquals(third.status, 200, JSON.stringify(third.json));
          assertEquals(third.json.session, session);
          // Anthropic wants alternating roles: the unanswered "second message" and "third" are
          // sent as one user turn of two text blocks.
          assertEquals(format.messages(server.requests[0].body), [
            { role: "user", content: [{ type: "text", text: "first message" }] },
            { role: "assistant", content: [{ type: "text", text: "first reply" }] },
            {
              role: "user",
              content: [{ type: "text", text: "second message" }, { type: "text", text: "third" }],
            },
          ]);
        } finally {
          await stopGateway(gateway);
        }
      });
    } finally {
      await Deno.remove(home.dir, { recursive: true });
    }
  },
);

sandboxTest(
  "e2e: SIGTERM drains: the running sandbox is killed, the caller gets 503, exit 0",
  async () => {
    const marker = markedSleep(41);
    const script = [
      format.toolCall("c1", "bash", [JSON.stringify({ command: `${marker}; echo late` })]),
    ];
    await withScriptedServer(script, async (server) => {
      const home = await makeCoopHome(config(server.url));
      const gateway = await startGateway(home, BOB);
      try {
        const pending = postMessage(gateway.url, BOB.BOB_TOKEN, {
          text: "sleep",
          session: "drain1",
        });
        await until("the sandboxed sleep to start", () => hostProcessesWith(marker).length > 0);
        const started = performance.now();
        gateway.child.kill("SIGTERM");
        const status = await gateway.status;
        const response = await pending;
        assertEquals(status.code, 0, gateway.stderr());
        assert(performance.now() - started < 10_000, "drained promptly");
        assertEquals(response.status, 503);
        assertEquals((response.json.error as { code: string }).code, "shutting_down");
        assertEquals(hostProcessesWith(marker), [], "no sandboxed process outlives the gateway");
        assertMatch(gateway.stderr(), /stopped/);
        assertEquals(server.requests.length, 1, "the cancelled turn did not go on");
        // Flushed: the user's message and the interrupted tool call are in the database.
        const history = sessionHistory(home, { channel: "http", user: "bob", session: "drain1" });
        assertEquals(history.map((m) => m.role), ["user", "assistant", "tool"]);
        assertMatch(JSON.stringify(history[2].content), /killed by SIGKILL/);
      } finally {
        await stopGateway(gateway);
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  },
);
