import net from "node:net";
import { runTurn, TurnError } from "../../src/agent/agent_loop.ts";
import {
  DEFAULT_PROVIDER_TIMEOUTS,
  defaultDialer,
  type Dialer,
  sendRequest,
} from "../../src/agent/http_transport.ts";
import { ProviderError } from "../../src/agent/provider_error.ts";
import { createProvider } from "../../src/agent/provider_registry.ts";
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { withBlackHole } from "./black_hole.ts";
import { withScriptedServer } from "./scripted_server.ts";
import { sandboxedTool, turnOptions } from "./turn_fixture.ts";
import { ANTHROPIC } from "./wire_formats.ts";

/** A raw HTTP server that answers with `head` and `bodyStart`, then drops the connection. */
async function withBreakingServer(fn: (url: string) => Promise<void>): Promise<void> {
  const server = net.createServer((socket) => {
    socket.once("data", () => {
      socket.write(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 1000\r\n\r\n" +
          "data: {}\n\n",
      );
      setTimeout(() => socket.resetAndDestroy(), 50);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await fn(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}/v1/messages`);
  } finally {
    await new Promise((resolve) => server.close(resolve));
  }
}

const post = (url: string, signal?: AbortSignal) =>
  sendRequest({
    provider: "p",
    url,
    headers: { "content-type": "application/json" },
    body: "{}",
    timeouts: DEFAULT_PROVIDER_TIMEOUTS,
    signal,
  });

Deno.test("a connection that breaks mid-stream is a provider.stream error naming the URL", async () => {
  await withBreakingServer(async (url) => {
    const response = await post(url);
    assertEquals(response.status, 200);
    assertEquals(response.headers.get("content-type"), "text/event-stream");
    const error = await assertRejects(() => response.text(), ProviderError);
    assertEquals(error.code, "provider.stream");
    assertMatch(error.message, /^provider "p": the connection to http:\S+ broke mid-stream: /);
  });
});

Deno.test("cancelling while connecting ends at once with the signal's reason", async () => {
  await withBlackHole(async (url) => {
    const controller = new AbortController();
    const started = performance.now();
    setTimeout(() => controller.abort(new DOMException("stop", "AbortError")), 50);
    const error = await assertRejects(() => post(`${url}/x`, controller.signal), DOMException);
    assertEquals(error.name, "AbortError");
    assert(performance.now() - started < DEFAULT_PROVIDER_TIMEOUTS.connectMs);
  });
});

Deno.test("a turn's model calls reuse one connection; a timed-out one is never reused", async () => {
  const format = ANTHROPIC;
  const script = [
    format.toolCall("t1", "bash", ['{"command": "ls"}']),
    format.text(["done"]),
    { silent: true },
    format.text(["again"]),
  ];
  await withScriptedServer(script, async (server) => {
    let dials = 0;
    const dial: Dialer = (target) => {
      dials++;
      return defaultDialer(target);
    };
    const provider = createProvider(
      { name: "p", kind: format.kind, base_url: server.url, first_byte_timeout: 1000 },
      { retry: { maxAttempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, http: { dial } },
    );
    const turn = turnOptions(provider, {
      tools: [sandboxedTool("bash")],
      executeTool: () => Promise.resolve({ content: "ok", isError: false, sandboxed: true }),
    });
    assertEquals((await runTurn(turn)).reply, "done");
    assertEquals(dials, 1, "both model calls of the turn went over the first connection");
    await assertRejects(() => runTurn(turn), TurnError);
    assertEquals(dials, 1, "the silent request was sent on the kept connection");
    assertEquals((await runTurn(turn)).reply, "again");
    assertEquals(dials, 2, "the timed-out connection was closed, a new one dialled");
    // Nothing was sent again behind the loop's back (Deno's node:http replays requests whose
    // kept connection closes early, destroyed ones included).
    await new Promise((resolve) => setTimeout(resolve, 100));
    assertEquals(server.requests.length, 4);
  });
});
