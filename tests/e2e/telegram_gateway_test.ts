/**
 * `coop start` end to end over Telegram: the fake Bot API on loopback, the scripted model server,
 * the real sandbox. Bob's bash runs sandboxed and the reply shows it; editing coop.toml while the
 * gateway runs moves Bob to familiar (no bash offered), a broken edit keeps the old config;
 * updates pending across a restart (and a crash) are each answered once; a 10,000-character reply
 * arrives as three messages; 429s, 502s and an outage delay replies without losing them; the bot
 * token appears nowhere in the gateway's output, even at COOP_LOG=debug.
 */
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";
import {
  type RecordedRequest,
  type ScriptStep,
  withScriptedServer,
} from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { startFakeBotApi } from "../channels/fixtures/fake_bot_api.ts";
import { coopToml } from "./coop_toml.ts";
import { makeCoopHome } from "./gateway_process.ts";
import { messengerToml, startCoop } from "./messenger_process.ts";

const format = ANTHROPIC;
const READY = /telegram channel: @coop_test_bot/;
const BOB_CHAT = 4242;

/** These tests are about delivery: unknown senders are answered (as public), not paired. */
const NO_PAIRING = "\n[pairing]\nenabled = false\n";

function config(baseUrl: string, apiUrl: string, bobTrust = "full"): string {
  const extra = messengerToml({ telegram: apiUrl }) + NO_PAIRING;
  return coopToml({ kind: format.kind, baseUrl, extra })
    .replace('match = ["http:bob"]', `match = ["http:bob", "telegram:${BOB_CHAT}"]`)
    .replace('name = "bob"\ntrust = "full"', `name = "bob"\ntrust = "${bobTrust}"`);
}

/** The last `msg-N` the model was asked about (the newest user message). */
function lastAsked(request: RecordedRequest): string {
  return JSON.stringify(request.body).match(/msg-\d+/g)?.at(-1) ?? "?";
}

function assertNoToken(output: string, token: string): void {
  assertNotIncludes(output, token);
  assertNotIncludes(output, token.split(":")[1]);
  assertNotIncludes(output, encodeURIComponent(token));
}

sandboxTest(
  "e2e telegram: bob's bash runs sandboxed; a live edit makes him familiar; a broken edit is refused",
  async () => {
    const api = startFakeBotApi();
    const script: ScriptStep[] = [
      format.toolCall("call_1", "bash", [
        JSON.stringify({ command: "id; cat /etc/shadow; echo m-$((6*7))" }),
      ]),
      (request) =>
        format.text([`Sandbox said: ${JSON.stringify(format.messages(request.body).at(-1))}`]),
      format.text(["no commands for you"]),
      format.text(["still familiar"]),
    ];
    try {
      await withScriptedServer(script, async (server) => {
        const home = await makeCoopHome(config(server.url, api.url));
        const coop = await startCoop(home, {
          TELEGRAM_BOT_TOKEN: api.token,
          COOP_LOG: "debug",
        }, READY);
        try {
          api.privateMessage(BOB_CHAT, "run id please", { firstName: "Bob" });
          const [reply] = await api.waitForSent(1, 60_000);
          assertEquals(reply.chatId, BOB_CHAT);
          assertMatch(reply.text, /^Sandbox said: /);
          assertMatch(reply.text, /uid=0\(root\)/);
          assertMatch(reply.text, /\/etc\/shadow: No such file or directory/);
          assertMatch(reply.text, /m-42/);
          assert(format.toolNames(server.requests[0].body).includes("bash"), "bob (full) has bash");

          // Bob becomes familiar while coop start runs: his next turn is offered no bash.
          const mark = coop.stderr().length;
          await Deno.writeTextFile(
            home.config,
            config(server.url, api.url, "familiar").replaceAll("{{dir}}", home.dir),
          );
          await coop.waitFor(/config\.reload \("file changed"\): users \[ "bob" \]/, 20_000, mark);
          api.privateMessage(BOB_CHAT, "and now?");
          await api.waitForSent(2);
          assertEquals(api.messagesTo(BOB_CHAT).at(-1)?.text, "no commands for you");
          assertEquals(format.toolNames(server.requests[2].body).includes("bash"), false);

          // A broken edit: the error is logged with file and key; the running config stays.
          const before = coop.stderr().length;
          await Deno.writeTextFile(
            home.config,
            config(server.url, api.url, "superuser").replaceAll("{{dir}}", home.dir),
          );
          await coop.waitFor(
            /config\.reload_rejected ".*coop\.toml": "users\[\d\]\.trust": .*got "superuser"/,
            20_000,
            before,
          );
          api.privateMessage(BOB_CHAT, "still there?");
          await api.waitForSent(3);
          assertEquals(api.messagesTo(BOB_CHAT).at(-1)?.text, "still familiar");
          assertEquals(format.toolNames(server.requests[3].body).includes("bash"), false);

          const status = await coop.stop();
          assertEquals(status.code, 0, coop.stderr());
          assertNoToken(coop.stderr(), api.token);
        } finally {
          await coop.stop("SIGKILL");
          await Deno.remove(home.dir, { recursive: true });
        }
      });
    } finally {
      await api.close();
    }
  },
);

sandboxTest(
  "e2e telegram: updates pending across a restart and a crash are each answered once",
  async () => {
    const api = startFakeBotApi();
    let crashed = false;
    const step: ScriptStep = (request) =>
      lastAsked(request) === "msg-5" && !crashed
        ? { silent: true } // the model never answers: the gateway is killed mid-turn
        : format.text([`answer to ${lastAsked(request)}`]);
    try {
      await withScriptedServer(Array(12).fill(step), async (server) => {
        const home = await makeCoopHome(config(server.url, api.url));
        const env = { TELEGRAM_BOT_TOKEN: api.token };
        let coop = await startCoop(home, env, READY);
        try {
          api.privateMessage(1, "msg-1");
          await api.waitForSent(1, 60_000);
          assertEquals((await coop.stop()).code, 0);
          // Written while the gateway is down.
          api.privateMessage(2, "msg-2");
          api.privateMessage(3, "msg-3");
          api.privateMessage(1, "msg-4");
          coop = await startCoop(home, env, READY);
          await api.waitForSent(4, 60_000);
          // A crash with a turn in flight: the update is answered after the next start.
          api.privateMessage(5, "msg-5");
          while (!server.requests.some((r) => lastAsked(r) === "msg-5")) {
            await new Promise((r) => setTimeout(r, 20));
          }
          await coop.stop("SIGKILL");
          crashed = true;
          coop = await startCoop(home, env, READY);
          await api.waitForSent(5, 60_000);
          await new Promise((r) => setTimeout(r, 500));
          const answers = api.sent.filter((s) => s.method === "sendMessage").map((s) => s.text);
          assertEquals(answers.sort(), [1, 2, 3, 4, 5].map((n) => `answer to msg-${n}`));
          assertEquals(api.pendingUpdates(), 0);
        } finally {
          await coop.stop("SIGKILL");
          await Deno.remove(home.dir, { recursive: true });
        }
      });
    } finally {
      await api.close();
    }
  },
);

sandboxTest(
  "e2e telegram: 10,000 characters in three messages; 429, 502 and an outage delay but lose nothing; no token in debug output",
  async () => {
    const api = startFakeBotApi();
    const long = Array.from(
      { length: 100 },
      (_, i) => `${String(i).padStart(3, "0")} ${"y".repeat(95)}`,
    ).join("\n");
    assertEquals(long.length, 9_999);
    const script: ScriptStep[] = [
      format.text([long]),
      format.text(["late but here"]),
      format.text(["after the outage"]),
    ];
    try {
      await withScriptedServer(script, async (server) => {
        const home = await makeCoopHome(config(server.url, api.url));
        const traceFile = `${home.dir}/trace.jsonl`;
        const coop = await startCoop(home, {
          TELEGRAM_BOT_TOKEN: api.token,
          COOP_LOG: "debug",
          COOP_LOG_FILE: traceFile,
        }, READY);
        try {
          api.privateMessage(7, "the long one");
          const three = await api.waitForSent(3, 60_000);
          assert(three.every((s) => s.text.length <= 4096));
          assertEquals(three.map((s) => s.text).join("\n"), long);

          api.failNext("sendMessage", { status: 429, retryAfter: 1 });
          api.failNext("sendMessage", { status: 502 });
          api.failNext("sendMessage", { status: 502 });
          api.failNext("getUpdates", { status: 502 });
          api.privateMessage(7, "again");
          await api.waitForSent(4, 60_000);
          assertEquals(api.messagesTo(7).at(-1)?.text, "late but here");
          assertMatch(coop.stderr(), /channel\.retry "telegram" "sendMessage" in 1000 ms/);

          // The Bot API unreachable for a while: polls fail (connection refused) and resume.
          const mark = coop.stderr().length;
          await api.down();
          await coop.waitFor(/telegram\.poll_failed/, 30_000, mark);
          api.up();
          api.privateMessage(7, "after");
          await api.waitForSent(5, 60_000);
          assertEquals(api.messagesTo(7).at(-1)?.text, "after the outage");
          assertEquals(server.requests.length, 3);

          assertEquals((await coop.stop()).code, 0);
          assertNoToken(coop.stderr(), api.token);
          // The JSON trace carries every structured field: no token there either.
          const trace = await Deno.readTextFile(traceFile);
          assertMatch(trace, /"telegram\.poll_failed"/);
          assertNoToken(trace, api.token);
        } finally {
          await coop.stop("SIGKILL");
          await Deno.remove(home.dir, { recursive: true });
        }
      });
    } finally {
      await api.close();
    }
  },
);

sandboxTest(
  "e2e telegram: a refused token is reported without being shown; the gateway stays up",
  async () => {
    const api = startFakeBotApi();
    const wrong = "7000001:AAHwrongWRONGwrongWRONGwrong00000";
    try {
      await withScriptedServer([], async (server) => {
        const home = await makeCoopHome(config(server.url, api.url));
        const coop = await startCoop(
          home,
          { TELEGRAM_BOT_TOKEN: wrong, COOP_LOG: "debug" },
          /telegram: not serving: Telegram getMe: 401 Unauthorized/,
        );
        try {
          assertEquals((await coop.stop()).code, 0);
          assertNoToken(coop.stderr(), wrong);
          assertEquals(server.requests.length, 0);
        } finally {
          await coop.stop("SIGKILL");
          await Deno.remove(home.dir, { recursive: true });
        }
      });
    } finally {
      await api.close();
    }
  },
);
