/**
 * The Telegram channel against the fake Bot API, with a fake turn handler: what the gateway is
 * told, what the chat receives, in which order, and what survives a restart.
 */
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";
import { TelegramChannel } from "../../src/channels/telegram/telegram_channel.ts";
import { CHAT_APOLOGY } from "../../src/channels/chat_answer.ts";
import { TurnRefusedError } from "../../src/errors/turn_refused.ts";
import { openStateDb } from "../../src/state/state_db.ts";
import type { IncomingMessage, TurnHandler, TurnOutcome } from "../../src/gateway/turn_handler.ts";
import { FAKE_BOT, type FakeBotApi, startFakeBotApi } from "./fixtures/fake_bot_api.ts";
import { until } from "../sandbox/harness.ts";
import { TelegramBotApi } from "../../src/channels/telegram/bot_api.ts";
import { ChannelInbox } from "../../src/state/channel_inbox.ts";

const FAST = { baseMs: 10, maxMs: 50 };

function outcome(reply: string, extra: Partial<TurnOutcome> = {}): TurnOutcome {
  return { reply, session: "s", tools: [], ...extra };
}

async function withTelegram(
  handle: TurnHandler,
  fn: (
    ctx: { api: FakeBotApi; seen: IncomingMessage[]; restart(): Promise<void> },
  ) => Promise<void>,
): Promise<void> {
  const api = startFakeBotApi();
  const dir = await Deno.makeTempDir({ prefix: "coop-tg-" });
  const db = openStateDb(dir);
  const seen: IncomingMessage[] = [];
  const recording: TurnHandler = (m) => {
    seen.push(m);
    return handle(m);
  };
  const open = () =>
    new TelegramChannel({
      token: api.token,
      apiRoot: api.url,
      db,
      handle: recording,
      pollTimeoutSeconds: 5,
      typingEveryMs: 50,
      backoff: FAST,
    });
  let channel = open();
  await channel.start();
  try {
    await fn({
      api,
      seen,
      restart: async () => {
        await channel.stop({ cancel: true });
        channel = open();
        await channel.start();
      },
    });
  } finally {
    await channel.stop({ cancel: true });
    db.close();
    await api.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("telegram: a private message reaches the gateway as telegram:<user id> and is answered", async () => {
  await withTelegram((m) => Promise.resolve(outcome(`echo: ${m.text}`)), async ({ api, seen }) => {
    api.privateMessage(4242, "hello", { firstName: "Bob" });
    const [reply] = await api.waitForSent(1);
    assertEquals([reply.chatId, reply.text, reply.replyTo], [4242, "echo: hello", undefined]);
    assertEquals(seen[0].channel, "telegram");
    assertEquals(seen[0].sender, "4242");
    assertEquals(seen[0].senderName, "Bob");
    assertEquals(seen[0].group, undefined);
    // "typing" is sent without waiting for it, just before the reply: it may arrive after it.
    const typing = () => api.sent.some((s) => s.method === "sendChatAction" && s.text === "typing");
    assert(await until(typing, 10_000), "no typing action was sent");
  });
});

Deno.test("telegram: group messages carry the group and whether they address the bot", async () => {
  await withTelegram((m) => Promise.resolve(outcome(`ok ${m.text}`)), async ({ api, seen }) => {
    api.groupMessage(-1001, 5, "just chatting");
    api.groupMessage(-1001, 5, "what time is it", { mention: true });
    api.groupMessage(-1001, 6, "/status", { command: true });
    api.groupMessage(-1001, 6, "and you?", { replyToBotMessage: 77 });
    api.groupMessage(-1001, 6, "/help@other_bot", { command: true });
    await api.waitForSent(5);
    assertEquals(seen.map((m) => [m.group, m.addressed, m.sender]), [
      ["-1001", false, "5"],
      ["-1001", true, "5"],
      ["-1001", true, "6"],
      ["-1001", true, "6"],
      ["-1001", false, "6"],
    ]);
    // Each answer replies to the group message it answers, in order.
    assertEquals(api.messagesTo(-1001).map((s) => s.text), [
      "ok just chatting",
      `ok @${FAKE_BOT.username} what time is it`,
      "ok /status",
      "ok and you?",
      "ok /help@other_bot",
    ]);
    assert(api.messagesTo(-1001).every((s) => s.replyTo !== undefined));
  });
});

Deno.test("telegram: a silent outcome sends nothing; files follow the reply as documents", async () => {
  const handle: TurnHandler = (m) =>
    Promise.resolve(
      m.text === "quiet" ? outcome("", { silent: true }) : outcome("here", {
        files: [{
          name: "notes.txt",
          mediaType: "text/plain",
          bytes: new TextEncoder().encode("hi"),
        }],
      }),
    );
  await withTelegram(handle, async ({ api, seen }) => {
    api.privateMessage(1, "quiet");
    api.privateMessage(1, "file please");
    const sent = await api.waitForSent(2);
    assertEquals(seen.length, 2);
    assertEquals(sent.map((s) => [s.method, s.text]), [
      ["sendMessage", "here"],
      ["sendDocument", "notes.txt"],
    ]);
    assertEquals(new TextDecoder().decode(sent[1].bytes), "hi");
  });
});

Deno.test("telegram: 10,000 characters arrive as three messages, in order, split at line breaks", async () => {
  const line = "x".repeat(99) + "\n";
  const long = line.repeat(100); // 10,000 characters
  await withTelegram(() => Promise.resolve(outcome(long)), async ({ api }) => {
    api.privateMessage(9, "long please");
    const sent = await api.waitForSent(3);
    assertEquals(sent.length, 3);
    assert(sent.every((s) => s.text.length <= 4096));
    assertEquals(sent.map((s) => s.text).join("\n").trimEnd(), long.trimEnd());
  });
});

Deno.test("telegram: per chat in order, chats at the same time", async () => {
  const gates = new Map<string, () => void>();
  const handle: TurnHandler = async (m) => {
    if (m.text === "slow") await new Promise<void>((resolve) => gates.set(m.sender, resolve));
    return outcome(`done ${m.text}`);
  };
  await withTelegram(handle, async ({ api }) => {
    api.privateMessage(1, "slow");
    api.privateMessage(1, "second");
    api.privateMessage(2, "other chat");
    await api.waitForSent(1);
    assertEquals(api.messagesTo(2).map((s) => s.text), ["done other chat"]);
    assertEquals(api.messagesTo(1).length, 0); // "second" waits for "slow"
    gates.get("1")!();
    await api.waitForSent(3);
    assertEquals(api.messagesTo(1).map((s) => s.text), ["done slow", "done second"]);
  });
});

Deno.test("telegram: a refused turn sends its reply; a failure one apology", async () => {
  const handle: TurnHandler = (m) => {
    if (m.text === "limit") {
      return Promise.reject(
        new TurnRefusedError("turn.limit", "too many", {
          httpStatus: 429,
          reply: "You have too many requests running; try again in a minute.",
        }),
      );
    }
    return Promise.reject(new Error("provider exploded"));
  };
  await withTelegram(handle, async ({ api }) => {
    api.privateMessage(3, "limit");
    api.privateMessage(3, "boom");
    const sent = await api.waitForSent(2);
    assertEquals(sent.map((s) => s.text), [
      "You have too many requests running; try again in a minute.",
      CHAT_APOLOGY,
    ]);
  });
});

Deno.test("telegram: 429 with retry_after and 502s delay messages, none is lost", async () => {
  await withTelegram((m) => Promise.resolve(outcome(`re ${m.text}`)), async ({ api }) => {
    api.failNext("sendMessage", { status: 429, retryAfter: 1 });
    api.failNext("sendMessage", { status: 502 });
    api.failNext("sendMessage", { status: 502 });
    api.failNext("getUpdates", { status: 502 });
    const started = performance.now();
    api.privateMessage(5, "one");
    api.privateMessage(5, "two");
    const sent = await api.waitForSent(2);
    assertEquals(sent.map((s) => s.text), ["re one", "re two"]);
    assert(performance.now() - started >= 1000, "retry_after (1 s) was honoured");
    assertEquals(api.calls.get("sendMessage"), 5);
  });
});

Deno.test("telegram: pending updates are answered once after a restart, none twice", async () => {
  let release: () => void = () => {};
  let hold = true;
  const handle: TurnHandler = async (m) => {
    if (hold && m.text === "held") await new Promise<void>((r) => release = r);
    return outcome(`answer ${m.text}`);
  };
  await withTelegram(handle, async ({ api, seen, restart }) => {
    api.privateMessage(1, "first");
    await api.waitForSent(1);
    api.privateMessage(2, "held");
    // Received (in the inbox), not answered: the restart cancels it.
    while (!seen.some((m) => m.text === "held")) await new Promise((r) => setTimeout(r, 10));
    hold = false;
    await restart();
    release();
    api.privateMessage(3, "after");
    await api.waitForSent(3);
    await new Promise((r) => setTimeout(r, 200));
    assertEquals(api.sent.filter((s) => s.method === "sendMessage").map((s) => s.text).sort(), [
      "answer after",
      "answer first",
      "answer held",
    ]);
    assertEquals(seen.filter((m) => m.text === "first").length, 1);
  });
});

Deno.test("telegram: the inbox keeps an update until done, and records each only once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-inbox-" });
  const db = openStateDb(dir);
  try {
    const inbox = new ChannelInbox(db, "telegram", "1");
    assertEquals(inbox.cursor(), null);
    const fresh = inbox.receive([{ item: "10", chat: "5", payload: { a: 1 } }], "11");
    assertEquals(inbox.receive([{ item: "10", chat: "5", payload: { a: 1 } }], "11"), []);
    assertEquals(inbox.cursor(), "11");
    assertEquals(inbox.pending().map((p) => p.payload), [{ a: 1 }]);
    inbox.done(fresh[0].seq);
    assertEquals(inbox.pending(), []);
    assertEquals(new ChannelInbox(db, "telegram", "2").cursor(), null);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("telegram: no error message names the token (refused, HTTP error, network down)", async () => {
  const api = startFakeBotApi();
  const messages: string[] = [];
  const collect = async (call: () => Promise<unknown>) => {
    try {
      await call();
    } catch (error) {
      messages.push(String(error), (error as Error).stack ?? "", JSON.stringify(error));
      assertEquals((error as Error).cause, undefined);
    }
  };
  try {
    await collect(() => new TelegramBotApi("123456:WRONGwrongWRONGwrongWRONG", api.url).getMe());
    api.failNext("getMe", { status: 502 });
    await collect(() => new TelegramBotApi(api.token, api.url).getMe());
    await collect(() => new TelegramBotApi(api.token, "http://127.0.0.1:9").getMe());
    await collect(() => new TelegramBotApi(api.token, "http://no-such-host.invalid").getMe());
  } finally {
    await api.close();
  }
  assertEquals(messages.length, 12);
  assertMatch(messages[0], /getMe: 401/);
  for (const text of messages) {
    assertNotIncludes(text, api.token);
    assertNotIncludes(text, "WRONGwrong");
    assertNotIncludes(text, api.token.split(":")[1]);
  }
});
