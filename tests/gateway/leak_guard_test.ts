/**
 * Which turns and paths the leak guard scans (non-owner: everything; owner: by
 * `[agent] owner_leak_scan`), tool arguments walked, streamed text held until a response is
 * complete, counts for `/status`.
 */
import { assert, assertEquals } from "../assert.ts";
import { LeakGuard, type LeakScope } from "../../src/gateway/leak_guard.ts";
import type { TurnEvent } from "../../src/gateway/turn_handler.ts";
import { parseConfig } from "../../src/config/config.ts";

const KEY = "held-key-0123456789abcdef";
const SECRETS = [{ value: KEY, kind: "provider_key", label: "provider key" }];
type OwnerScan = "channel_replies" | "everything" | "off";
const guard = (ownerLeakScan: OwnerScan = "channel_replies") =>
  new LeakGuard({ agent: { ownerLeakScan } as never }, SECRETS);

const scope = (over: Partial<LeakScope>): LeakScope => ({
  where: "tool_result",
  principal: "bob",
  trust: "full",
  channel: "http",
  ...over,
});

Deno.test("leak guard: every path of a non-owner turn is scanned, whatever the owner setting", () => {
  for (const setting of ["channel_replies", "everything", "off"] as const) {
    for (const trust of ["full", "inner", "familiar", "public"] as const) {
      for (const where of ["tool_result", "tool_arguments", "memory_write", "reply"] as const) {
        for (const channel of ["terminal", "http", "cron"]) {
          const out = guard(setting).redact(`x ${KEY}`, scope({ where, trust, channel }));
          assertEquals(
            out,
            "x [redacted: provider key]",
            `${setting} ${trust} ${where} ${channel}`,
          );
        }
      }
    }
  }
});

Deno.test("leak guard: the owner's replies to a channel other than the terminal, by default", () => {
  const g = guard();
  const owner = (where: LeakScope["where"], channel: string) =>
    g.redact(KEY, scope({ where, channel, trust: "owner", principal: "alice" })) !== KEY;
  assert(owner("reply", "http"));
  assert(owner("reply", "cron"));
  assert(!owner("reply", "terminal"));
  assert(!owner("tool_result", "http"));
  assert(!owner("tool_arguments", "http"));
});

Deno.test("leak guard: owner_leak_scan = everything / off", () => {
  const owner = { trust: "owner" as const, principal: "alice", channel: "terminal" };
  assertEquals(guard("everything").redact(KEY, scope({ ...owner })), "[redacted: provider key]");
  for (const where of ["tool_result", "reply"] as const) {
    assertEquals(guard("off").redact(KEY, scope({ ...owner, where, channel: "http" })), KEY);
  }
});

Deno.test("leak guard: tool arguments are walked, strings redacted, the rest kept", () => {
  const args = { command: `echo ${KEY}`, list: [KEY, 3, null], nested: { ok: true } };
  assertEquals(guard().redactArguments(args, scope({ where: "tool_arguments" })), {
    command: "echo [redacted: provider key]",
    list: ["[redacted: provider key]", 3, null],
    nested: { ok: true },
  });
});

Deno.test("leak guard: streamed text is held and sent redacted once the response is whole", () => {
  const g = guard();
  const seen: TurnEvent[] = [];
  const stream = g.streamed((e) => seen.push(e), () => scope({}));
  stream.onEvent!({ type: "text", text: `the key is ${KEY.slice(0, 10)}` });
  stream.onEvent!({ type: "text", text: `${KEY.slice(10)} ok` });
  assertEquals(seen, [], "nothing leaves before the response is complete");
  stream.onEvent!({ type: "tool_start", name: "bash", sandboxed: true, summary: "ls" });
  assertEquals(seen[0], { type: "text", text: "the key is [redacted: provider key] ok" });
  assertEquals(seen[1].type, "tool_start");
  stream.onEvent!({ type: "text", text: "done" });
  stream.flush();
  assertEquals(seen[2], { type: "text", text: "done" });
  assertEquals(g.status(), { detected: 1, byKind: { provider_key: 1 }, byPath: { reply: 1 } });
});

Deno.test("leak guard: the owner's terminal stream passes at once", () => {
  const seen: TurnEvent[] = [];
  const stream = guard().streamed(
    (e) => seen.push(e),
    () => ({ principal: "alice", trust: "owner", channel: "terminal" }),
  );
  stream.onEvent!({ type: "text", text: KEY });
  assertEquals(seen, [{ type: "text", text: KEY }]);
});

Deno.test("config: [agent] owner_leak_scan defaults to channel_replies and takes the others", () => {
  const parse = (agent: string) => parseConfig(`[agent]\n${agent}`, "/x/coop.toml", "/x");
  assertEquals(parse("").agent.ownerLeakScan, "channel_replies");
  assertEquals(parse('owner_leak_scan = "everything"').agent.ownerLeakScan, "everything");
  assertEquals(parse('owner_leak_scan = "off"').agent.ownerLeakScan, "off");
  let message = "";
  try {
    parse('owner_leak_scan = "sometimes"');
  } catch (error) {
    message = String(error);
  }
  assert(message.includes("agent.owner_leak_scan"), message);
});

Deno.test("leak guard: after a reload, the secrets held before are still scanned for", () => {
  const OLD_TOKEN = "old-http-token-0123456789";
  const NEW_TOKEN = "new-http-token-9876543210";
  const config = { agent: { ownerLeakScan: "channel_replies" } as never };
  const before = new LeakGuard(config, [
    { value: OLD_TOKEN, kind: "channel_token", label: "channel token" },
  ]);
  // The reload re-keyed the channel: the running HTTP server still accepts the old token.
  const after = before.reconfigured(config, [
    { value: NEW_TOKEN, kind: "channel_token", label: "channel token" },
  ]);
  assertEquals(
    after.redact(`a ${OLD_TOKEN} b ${NEW_TOKEN}`, scope({})),
    "a [redacted: channel token] b [redacted: channel token]",
  );
});
