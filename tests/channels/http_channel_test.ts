import { assert, assertEquals, assertMatch } from "../assert.ts";
import { createHttpHandler, serveHttpChannel } from "../../src/channels/http_channel.ts";
import type { IncomingMessage, TurnHandler } from "../../src/gateway/turn_handler.ts";

const tokens = [{ id: "bob", token: "bob-secret-token" }, { id: "carol", token: "carol-token" }];

function setup(handle?: TurnHandler) {
  const seen: IncomingMessage[] = [];
  const handler = createHttpHandler({
    tokens,
    maxBodyBytes: 1024,
    handle: handle ?? ((m) => {
      seen.push(m);
      return Promise.resolve({
        reply: `echo: ${m.text}`,
        session: m.session ?? "new-1",
        tools: [],
      });
    }),
  });
  const post = (body: string, token?: string) =>
    handler(
      new Request("http://coop/v1/messages", {
        method: "POST",
        body,
        headers: token ? { authorization: `Bearer ${token}` } : {},
      }),
    );
  return { handler, post, seen };
}

Deno.test("a valid token speaks as http:<id> and gets reply, session and tools", async () => {
  const { post, seen } = setup();
  const res = await post(JSON.stringify({ text: "hi", session: "s-1" }), "bob-secret-token");
  assertEquals(res.status, 200);
  assertEquals(await res.json(), { reply: "echo: hi", session: "s-1", tools: [] });
  assertEquals([seen[0].channel, seen[0].sender, seen[0].text, seen[0].session], [
    "http",
    "bob",
    "hi",
    "s-1",
  ]);
});

Deno.test("no token, a wrong token or another scheme is 401 and the gateway never sees it", async () => {
  const { post, handler, seen } = setup();
  for (const token of [undefined, "wrong", "bob-secret-tokenX", "bob-secret-toke"]) {
    const res = await post(JSON.stringify({ text: "hi" }), token);
    assertEquals(res.status, 401);
    assertEquals(res.headers.get("www-authenticate"), "Bearer");
    assertEquals((await res.json()).error.code, "unauthorized");
  }
  const basic = await handler(
    new Request("http://coop/v1/messages", {
      method: "POST",
      body: "{}",
      headers: { authorization: "Basic Ym9iLXNlY3JldC10b2tlbg==" },
    }),
  );
  assertEquals(basic.status, 401);
  assertEquals(seen.length, 0);
});

Deno.test("malformed bodies are precise 400s; oversized bodies 413", async () => {
  const { post, seen } = setup();
  const cases: Array<[string, number, RegExp]> = [
    ["not json", 400, /invalid_json/],
    [JSON.stringify({ text: "" }), 400, /text: must be a non-empty string/],
    [JSON.stringify({ text: "x", extra: 1 }), 400, /invalid_request/],
    [JSON.stringify({ text: "x", session: "../etc" }), 400, /session: must be 1-64/],
    [JSON.stringify({ text: "x".repeat(2000) }), 413, /body_too_large/],
  ];
  for (const [body, status, message] of cases) {
    const res = await post(body, "carol-token");
    assertEquals(res.status, status, body);
    assertMatch(JSON.stringify(await res.json()), message);
  }
  assertEquals(seen.length, 0);
});

Deno.test("healthz, unknown routes and wrong methods", async () => {
  const { handler } = setup();
  assertEquals(await (await handler(new Request("http://coop/healthz"))).json(), { ok: true });
  assertEquals((await handler(new Request("http://coop/nope"))).status, 404);
  assertEquals((await handler(new Request("http://coop/v1/messages"))).status, 405);
});

Deno.test("a failing turn is a 500 without internals", async () => {
  const { post } = setup(() => Promise.reject(new Error("db exploded at /root/.coop/coop.db")));
  const res = await post(JSON.stringify({ text: "hi" }), "bob-secret-token");
  assertEquals(res.status, 500);
  const text = await res.text();
  assert(!text.includes("/root"), text);
  assertMatch(text, /turn_failed/);
});

Deno.test("served on loopback: a real request round-trips", async () => {
  const abort = new AbortController();
  const server = serveHttpChannel("127.0.0.1:0", {
    tokens,
    maxBodyBytes: 1024,
    limits: { headersTimeoutMs: 5_000, requestTimeoutMs: 5_000, maxConnections: 8 },
    handle: (m) => Promise.resolve({ reply: `hi ${m.sender}`, session: "s", tools: [] }),
  }, abort.signal);
  try {
    const res = await fetch(`http://127.0.0.1:${server.addr.port}/v1/messages`, {
      method: "POST",
      headers: { authorization: "Bearer bob-secret-token", "content-type": "application/json" },
      body: JSON.stringify({ text: "hello" }),
    });
    assertEquals((await res.json()).reply, "hi bob");
  } finally {
    abort.abort();
    await server.finished;
  }
});
