/**
 * Channel overhead (issue 12): a message injected into the fake Bot API → its reply received
 * back by the fake, against the same turn through the gateway directly (`gateway.handle`), p50
 * over 200 messages from 20 chats, one at a time (the chats in turn), each followed by its direct
 * twin so that drift hits both alike; turns at once would measure fsync contention instead. The
 * long-poll wait is excluded by timing from the moment a `getUpdates` answer carried the update;
 * the time from injection is printed too. Every message must be answered exactly once. Run by
 * `deno task bench` (scripts/bench.ts); informational: a missed goal is marked, never fails.
 * @module
 */
import { join } from "node:path";
import { parseConfig } from "../src/config/config.ts";
import { Gateway } from "../src/gateway/gateway.ts";
import { openStateDb } from "../src/state/state_db.ts";
import { TelegramChannel } from "../src/channels/telegram/telegram_channel.ts";
import type { ScriptedReply } from "../tests/agent/scripted_server.ts";
import { ANTHROPIC } from "../tests/agent/wire_formats.ts";
import { startFakeBotApi } from "../tests/channels/fixtures/fake_bot_api.ts";

const CHATS = 20;
const ROUNDS = 10;
const WARMUP_ROUNDS = 2;
/** Goal from issue 12: what the Telegram channel may add to a turn, at p50. */
const GOAL_OVERHEAD_MS = 5;

/** Nearest-rank percentile (p in 0..100) of unsorted samples, as in bench.ts. */
function percentile(samples: readonly number[], p: number): number {
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))];
}

/** The Messages API on loopback, answering at once with `re <the last user message>`. */
function startProvider(): Deno.HttpServer<Deno.NetAddr> {
  const body = (reply: ScriptedReply) => (reply.chunks ?? []).join("");
  const headers = { "content-type": "text/event-stream" };
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (request) => {
    const { messages } = await request.json() as {
      messages: Array<{ role: string; content: unknown }>;
    };
    const last = messages.at(-1);
    const text = typeof last?.content === "string"
      ? last.content
      : JSON.stringify(last?.content).match(/m-\d+-\d+/)?.[0] ?? "?";
    return new Response(body(ANTHROPIC.text([`re ${text}`])), { headers });
  });
}

async function main(): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-bench-channels-" }));
  const provider = startProvider();
  const api = startFakeBotApi();
  const config = parseConfig(
    `
[agent]
model = "bench/m"
workspace = "workspace"
state_dir = "state"
max_concurrent_turns_per_user = 64
max_queued_turns_per_user = 64
[[users]]
name = "bob"
trust = "familiar"
match = ["telegram:*"]
[[providers]]
name = "bench"
kind = "anthropic"
base_url = "http://127.0.0.1:${provider.addr.port}"
`,
    join(dir, "coop.toml"),
    dir,
  );
  const db = openStateDb(config.agent.stateDir);
  const gateway = Gateway.open(config, { db });
  const channel = new TelegramChannel({
    token: api.token,
    apiRoot: api.url,
    db,
    handle: gateway.handle,
  });
  await channel.start();
  const viaChannel: number[] = [];
  const viaChannelFromInjection: number[] = [];
  const direct: number[] = [];
  const expected: string[] = [];
  try {
    for (let round = 0; round < WARMUP_ROUNDS + ROUNDS; round++) {
      const measured = round >= WARMUP_ROUNDS;
      for (let c = 0; c < CHATS; c++) {
        // Through the channel.
        const chatId = 1000 + c;
        const text = `m-${c}-${round}`;
        const reply = api.nextMessageTo(chatId);
        const injected = performance.now();
        const updateId = api.privateMessage(chatId, text);
        const sent = await reply;
        if (measured) {
          expected.push(`re ${text}`);
          viaChannel.push(sent.at - (api.deliveredAt(updateId) ?? injected));
          viaChannelFromInjection.push(sent.at - injected);
        }
        // The same turn straight through the gateway.
        const start = performance.now();
        await gateway.handle({
          channel: "telegram",
          sender: String(2000 + c),
          text: `d-${c}-${round}`,
          session: `tg${2000 + c}`,
        });
        if (measured) direct.push(performance.now() - start);
      }
    }
  } finally {
    await channel.stop({ cancel: true });
    gateway.close();
    await api.close();
    await provider.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
  const answers = api.sent.filter((s) => s.method === "sendMessage" && s.chatId < 2000)
    .map((s) => s.text).filter((t) => !/^re m-\d+-[01]$/.test(t));
  const lost = expected.filter((t) => !answers.includes(t)).length;
  const duplicated = answers.length - new Set(answers).size;
  const p50 = percentile(viaChannel, 50);
  const p50Direct = percentile(direct, 50);
  const overhead = p50 - p50Direct;
  const mark = overhead <= GOAL_OVERHEAD_MS ? "ok" : "MISSED";
  console.log(
    `channel overhead (Telegram, ${viaChannel.length} messages from ${CHATS} chats, one at a time):`,
  );
  console.log(
    `  via the fake Bot API: p50 ${p50.toFixed(2)} ms, p95 ${
      percentile(viaChannel, 95).toFixed(2)
    } ms` +
      ` (from injection, long-poll wake-up included: p50 ${
        percentile(viaChannelFromInjection, 50).toFixed(2)
      } ms)`,
  );
  console.log(
    `  gateway directly:     p50 ${p50Direct.toFixed(2)} ms, p95 ${
      percentile(direct, 95).toFixed(2)
    } ms`,
  );
  console.log(
    `  added by the channel: p50 ${
      overhead.toFixed(2)
    } ms (goal ≤ ${GOAL_OVERHEAD_MS} ms: ${mark}); ` +
      `lost ${lost}, duplicated ${duplicated}${lost || duplicated ? " (MISSED)" : ""}`,
  );
}

if (import.meta.main) await main();
