/**
 * The Signal channel against the fake signal-cli daemon, with a fake turn handler: senders with
 * number and uuid, groups, mentions and quotes, attachments, reconnecting after a daemon restart,
 * and what a restart of Coop answers.
 */
import { Buffer } from "node:buffer";
import { assert, assertEquals } from "../assert.ts";
import { SignalChannel } from "../../src/channels/signal/signal_channel.ts";
import { openStateDb } from "../../src/state/state_db.ts";
import type { IncomingMessage, TurnHandler, TurnOutcome } from "../../src/gateway/turn_handler.ts";
import { type FakeSignalDaemon, startFakeSignalDaemon } from "./fixtures/fake_signal_daemon.ts";

const FAST = { baseMs: 10, maxMs: 50 };
const BOB = { number: "+15550002", uuid: "b0b00000-0000-4000-8000-000000000002", name: "Bob" };
const GROUP = "Zm9vYmFyZ3JvdXBpZGZvb2JhcmdydXBpZGZvb2Jhcmc+/w==";

function outcome(reply: string, extra: Partial<TurnOutcome> = {}): TurnOutcome {
  return { reply, session: "s", tools: [], ...extra };
}

async function withSignal(
  handle: TurnHandler,
  fn: (
    ctx: { daemon: FakeSignalDaemon; seen: IncomingMessage[]; restart(): Promise<void> },
  ) => Promise<void>,
): Promise<void> {
  const daemon = startFakeSignalDaemon();
  const dir = await Deno.makeTempDir({ prefix: "coop-signal-" });
  const db = openStateDb(dir);
  const seen: IncomingMessage[] = [];
  const open = () =>
    new SignalChannel({
      account: daemon.account,
      rpcUrl: daemon.url,
      db,
      handle: (m) => (seen.push(m), handle(m)),
      typingEveryMs: 50,
      backoff: FAST,
    });
  let channel = open();
  await channel.start();
  try {
    await fn({
      daemon,
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
    await daemon.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("signal: a direct message names the sender by number, the uuid as an alias", async () => {
  await withSignal((m) => Promise.resolve(outcome(`echo ${m.text}`)), async ({ daemon, seen }) => {
    daemon.typingEvent(BOB);
    daemon.directMessage(BOB, "hello");
    const [reply] = await daemon.waitForSent(1);
    assertEquals([reply.to, reply.message], [BOB.number, "echo hello"]);
    assertEquals(seen.length, 1);
    assertEquals(
      [seen[0].channel, seen[0].sender, seen[0].senderAliases, seen[0].senderName, seen[0].group],
      ["signal", BOB.number, [BOB.uuid], "Bob", undefined],
    );
    assert(daemon.sent.some((s) => s.method === "sendTyping" && s.to === BOB.number));
    assert(daemon.sent.some((s) => s.method === "sendTyping" && s.stop === true));
  });
});

Deno.test("signal: a sender known only by uuid is that uuid", async () => {
  await withSignal((m) => Promise.resolve(outcome(`hi ${m.sender}`)), async ({ daemon, seen }) => {
    daemon.directMessage({ uuid: BOB.uuid }, "who am i");
    const [reply] = await daemon.waitForSent(1);
    assertEquals([reply.to, seen[0].sender, seen[0].senderAliases], [
      BOB.uuid,
      BOB.uuid,
      undefined,
    ]);
  });
});

Deno.test("signal: group messages are group:<id>, addressed by mention, quote or /command", async () => {
  await withSignal(() => Promise.resolve(outcome(`ok`)), async ({ daemon, seen }) => {
    daemon.groupMessage(GROUP, BOB, "chatting");
    daemon.groupMessage(GROUP, BOB, "you there?", { mention: true });
    daemon.groupMessage(GROUP, BOB, "and this?", { quoteOurs: true });
    daemon.groupMessage(GROUP, BOB, "/status");
    await daemon.waitForSent(4);
    assertEquals(seen.map((m) => [m.group, m.addressed]), [
      [`group:${GROUP}`, false],
      [`group:${GROUP}`, true],
      [`group:${GROUP}`, true],
      [`group:${GROUP}`, true],
    ]);
    // The answers go to the group, quoting what they answer.
    const sent = daemon.messagesTo(`group:${GROUP}`);
    assertEquals(sent.length, 4);
    assert(sent.every((s) => typeof s.quoteTimestamp === "number"));
  });
});

Deno.test("signal: files are sent as data-URI attachments after the reply", async () => {
  const handle: TurnHandler = () =>
    Promise.resolve(outcome("see attached", {
      files: [{ name: "a.txt", mediaType: "text/plain", bytes: new TextEncoder().encode("hey") }],
    }));
  await withSignal(handle, async ({ daemon }) => {
    daemon.directMessage(BOB, "file?");
    const sent = await daemon.waitForSent(2);
    assertEquals(sent[0].message, "see attached");
    assertEquals(sent[1].attachments, [
      `data:text/plain;filename=a.txt;base64,${Buffer.from("hey").toString("base64")}`,
    ]);
  });
});

Deno.test("signal: the daemon restarting is reconnected to; messages meanwhile are answered once", async () => {
  await withSignal((m) => Promise.resolve(outcome(`re ${m.text}`)), async ({ daemon }) => {
    daemon.directMessage(BOB, "before");
    await daemon.waitForSent(1);
    await daemon.restart();
    // Received by the restarted daemon before Coop reconnected: kept, and sent on reconnect.
    daemon.directMessage(BOB, "during");
    await daemon.waitForListener();
    daemon.directMessage(BOB, "after");
    await daemon.waitForSent(3);
    await new Promise((r) => setTimeout(r, 200));
    assertEquals(daemon.messagesTo(BOB.number).map((s) => s.message), [
      "re before",
      "re during",
      "re after",
    ]);
    assert(daemon.eventConnections >= 2);
  });
});

Deno.test("signal: Coop restarting resumes after the last event; a pending one is answered once", async () => {
  let hold = true;
  let release: () => void = () => {};
  const handle: TurnHandler = async (m) => {
    if (hold && m.text === "held") await new Promise<void>((r) => release = r);
    return outcome(`re ${m.text}`);
  };
  await withSignal(handle, async ({ daemon, seen, restart }) => {
    daemon.directMessage(BOB, "first");
    await daemon.waitForSent(1);
    daemon.directMessage(BOB, "held");
    while (!seen.some((m) => m.text === "held")) await new Promise((r) => setTimeout(r, 10));
    hold = false;
    await restart();
    release();
    await daemon.waitForSent(2);
    daemon.directMessage(BOB, "third");
    await daemon.waitForSent(3);
    await new Promise((r) => setTimeout(r, 200));
    assertEquals(daemon.messagesTo(BOB.number).map((s) => s.message), [
      "re first",
      "re held",
      "re third",
    ]);
    // The second connection resumed after the last event the first one stored.
    assert(daemon.lastEventIds.at(-1)?.includes("-"), JSON.stringify(daemon.lastEventIds));
  });
});

Deno.test("signal: a JSON-RPC internal error is retried; the message arrives late", async () => {
  await withSignal((m) => Promise.resolve(outcome(`re ${m.text}`)), async ({ daemon }) => {
    daemon.failNext("send", { code: -32603, message: "Internal error" });
    daemon.directMessage(BOB, "again");
    const sent = await daemon.waitForSent(1);
    assertEquals(sent.map((s) => s.message), ["re again"]);
  });
});
