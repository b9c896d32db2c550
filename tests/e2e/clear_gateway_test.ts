/**
 * `/clear` through `coop start` on every channel, with the fakes on loopback and the scripted
 * model server: on Telegram, Signal and HTTP (the `session` sent back), `/clear` is answered by
 * the gateway — it never reaches the model — and the next message starts a session without the
 * earlier history. In a Telegram group, a stranger's `/clear` is refused and the history stays;
 * a member's clears it. HTTP's `/clear` without a session is a 400 naming what is missing.
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import {
  type RecordedRequest,
  type ScriptStep,
  withScriptedServer,
} from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { startFakeBotApi } from "../channels/fixtures/fake_bot_api.ts";
import { startFakeSignalDaemon } from "../channels/fixtures/fake_signal_daemon.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import { makeCoopHome, postMessage } from "./gateway_process.ts";
import { messengerToml, startCoop } from "./messenger_process.ts";

const format = ANTHROPIC;
const BOB_TG = 4242;
const GROUP = -1007;
const STRANGER_TG = 999;
const BOB_SIGNAL = { number: "+15550002", uuid: "b0b00000-0000-4000-8000-000000000002" };
const TOKENS = { BOB_TOKEN: "bob-secret-1" };
const CLEARED = /^Session cleared: /;

/** What the model was sent, as text. */
const asked = (request: RecordedRequest) => JSON.stringify(request.body);

sandboxTest(
  "e2e /clear: telegram, signal and HTTP end the session; a group needs a member",
  async () => {
    const api = startFakeBotApi();
    const daemon = startFakeSignalDaemon();
    const script: ScriptStep[] = [
      format.text(["tg-one"]),
      format.text(["tg-two"]),
      format.text(["sg-one"]),
      format.text(["sg-two"]),
      format.text(["http-one"]),
      format.text(["http-two"]),
      format.text(["group-one"]),
      format.text(["group-two"]),
      format.text(["group-three"]),
    ];
    try {
      await withScriptedServer(script, async (server) => {
        const extra = messengerToml({
          telegram: api.url,
          signal: { url: daemon.url, account: daemon.account },
        }) + httpChannelToml(["bob"]) + "\n[pairing]\nenabled = false\n";
        const home = await makeCoopHome(
          coopToml({ kind: format.kind, baseUrl: server.url, extra }).replace(
            'match = ["http:bob"]',
            `match = ["http:bob", "telegram:${BOB_TG}", "signal:${BOB_SIGNAL.uuid}"]`,
          ),
        );
        const coop = await startCoop(
          home,
          {
            TELEGRAM_BOT_TOKEN: api.token,
            ...TOKENS,
          },
          /telegram channel: @coop_test_bot[\s\S]*signal channel: |signal channel: [\s\S]*telegram channel: @coop_test_bot/,
        );
        try {
          // Telegram, a direct chat (session tg<chat>).
          api.privateMessage(BOB_TG, "tg msg-1");
          await api.waitForSent(1, 60_000);
          api.privateMessage(BOB_TG, "/clear", { command: true });
          await api.waitForSent(2, 60_000);
          assertMatch(api.messagesTo(BOB_TG).at(-1)!.text, CLEARED);
          api.privateMessage(BOB_TG, "tg msg-2");
          await api.waitForSent(3, 60_000);
          assertEquals(api.messagesTo(BOB_TG).at(-1)!.text, "tg-two");
          assertEquals(server.requests.length, 2, "/clear never reached the model");
          assert(!asked(server.requests[1]).includes("tg msg-1"), "the history is gone");

          // Signal, a direct chat (session sg-<number>).
          daemon.directMessage(BOB_SIGNAL, "sg msg-1");
          await daemon.waitForSent(1, 60_000);
          daemon.directMessage(BOB_SIGNAL, "/clear");
          await daemon.waitForSent(2, 60_000);
          assertMatch(daemon.messagesTo(BOB_SIGNAL.number).at(-1)!.message, CLEARED);
          daemon.directMessage(BOB_SIGNAL, "sg msg-2");
          await daemon.waitForSent(3, 60_000);
          assertEquals(server.requests.length, 4, "/clear never reached the model");
          assert(!asked(server.requests[3]).includes("sg msg-1"), "the history is gone");

          // HTTP: the session id sent back with /clear.
          const url = await httpUrl(coop.stderr());
          const first = await postMessage(url, TOKENS.BOB_TOKEN, { text: "http msg-1" });
          const session = String(first.json.session);
          const clear = await postMessage(url, TOKENS.BOB_TOKEN, { text: "/clear", session });
          assertEquals(clear.status, 200);
          assertMatch(String(clear.json.reply), CLEARED);
          assertEquals(clear.json.session, "");
          const again = await postMessage(url, TOKENS.BOB_TOKEN, { text: "http msg-2", session });
          assertEquals(again.json.reply, "http-two");
          assertEquals(server.requests.length, 6);
          assert(!asked(server.requests[5]).includes("http msg-1"), "the history is gone");
          const bare = await postMessage(url, TOKENS.BOB_TOKEN, { text: "/clear" });
          assertEquals(bare.status, 400);
          assertEquals((bare.json.error as { code: string }).code, "clear_needs_session");

          // A Telegram group: a stranger (public) may not clear it; bob (a member) may.
          api.groupMessage(GROUP, BOB_TG, "group msg-1", { mention: true });
          await api.waitForSent(4, 60_000);
          api.groupMessage(GROUP, STRANGER_TG, "/clear", { command: true });
          await api.waitForSent(5, 60_000);
          assertMatch(api.messagesTo(GROUP).at(-1)!.text, /Only someone known in this group/);
          api.groupMessage(GROUP, BOB_TG, "group msg-2", { mention: true });
          await api.waitForSent(6, 60_000);
          assert(asked(server.requests[7]).includes("group msg-1"), "the stranger cleared nothing");
          api.groupMessage(GROUP, BOB_TG, "/clear", { command: true });
          await api.waitForSent(7, 60_000);
          assertMatch(api.messagesTo(GROUP).at(-1)!.text, CLEARED);
          api.groupMessage(GROUP, BOB_TG, "group msg-3", { mention: true });
          await api.waitForSent(8, 60_000);
          assertEquals(server.requests.length, 9);
          assert(!asked(server.requests[8]).includes("group msg-2"), "the group's history is gone");
          assertEquals((await coop.stop()).code, 0, coop.stderr());
        } finally {
          await coop.stop("SIGKILL");
          await Deno.remove(home.dir, { recursive: true });
        }
      });
    } finally {
      await api.close();
      await daemon.close();
    }
  },
);

async function httpUrl(stderr: string): Promise<string> {
  const match = /http channel on (http:\/\/\S+)\n/.exec(stderr);
  assert(match, `no http address in:\n${stderr}`);
  return await Promise.resolve(match[1]);
}
