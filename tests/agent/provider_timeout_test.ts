import net from "node:net";
import { runTurn, TurnError } from "../../src/agent/agent_loop.ts";
import { defaultDialer, type Dialer } from "../../src/agent/http_transport.ts";
import type { RetryPolicy } from "../../src/agent/http_retry.ts";
import type { Provider } from "../../src/agent/provider.ts";
import { ProviderTimeoutError } from "../../src/agent/provider_error.ts";
import { createProvider, type ProviderEntry } from "../../src/agent/provider_registry.ts";
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { withBlackHole } from "./black_hole.ts";
import { type ScriptedServer, withScriptedServer } from "./scripted_server.ts";
import { turnOptions } from "./turn_fixture.ts";
import { WIRE_FORMATS, type WireFormat } from "./wire_formats.ts";

/** Two attempts, 1 ms apart: enough to see which timeouts are retried. */
const RETRY: RetryPolicy = { maxAttempts: 2, baseDelayMs: 1, maxDelayMs: 5 };
/** Slack for a loaded machine: the timeout must fire, and not long after its time. */
const SLACK_MS = 3000;
/**
 * The first-byte and idle timeouts under test. Client and server share this process, and after a
 * stall a due timer runs before I/O already waiting: a limit shorter than a stall of a loaded
 * machine would time out the later turn that must succeed, not only the one that must fail.
 */
const LIMIT_MS = 1000;

function provider(
  format: WireFormat,
  baseUrl: string,
  timeouts: Partial<ProviderEntry>,
  dial?: Dialer,
): Provider {
  return createProvider(
    { name: "slow", kind: format.kind, base_url: format.baseUrl(baseUrl), ...timeouts },
    { retry: RETRY, http: { dial } },
  );
}

/** Runs a turn that must fail with a timeout; returns the timeout and how long the turn took. */
async function timedOutTurn(
  provider: Provider,
): Promise<{ timeout: ProviderTimeoutError; elapsedMs: number; texts: string[] }> {
  const texts: string[] = [];
  const started = performance.now();
  const error = await assertRejects(
    () =>
      runTurn(turnOptions(provider, { onEvent: (e) => e.type === "text" && texts.push(e.text) })),
    TurnError,
  );
  const elapsedMs = performance.now() - started;
  assertEquals(error.code, "provider.timeout");
  assert(error.cause instanceof ProviderTimeoutError, `cause: ${error.cause}`);
  return { timeout: error.cause, elapsedMs, texts };
}

/** A later turn (the next cron tick) with the same provider gets its answer. */
async function nextTurnWorks(provider: Provider): Promise<void> {
  const result = await runTurn(turnOptions(provider));
  assertEquals(result.reply, "back again");
  assertEquals(result.stopReason, "end_turn");
}

for (const format of WIRE_FORMATS) {
  const name = (what: string) => `${format.kind}: ${what}`;

  Deno.test(name("a server that accepts and never answers: first_byte_timeout"), async () => {
    const script = [{ silent: true }, format.text(["back again"])];
    await withScriptedServer(script, async (server: ScriptedServer) => {
      const slow = provider(format, server.url, { first_byte_timeout: LIMIT_MS });
      const { timeout, elapsedMs } = await timedOutTurn(slow);
      assertEquals(timeout.phase, "first_byte");
      assertEquals(timeout.timeoutMs, LIMIT_MS);
      assertMatch(
        timeout.message,
        /^provider "slow": connected to http:\/\/127\.0\.0\.1:\d+\/\S+, but no response headers arrived within 1 s \(first_byte_timeout of \[\[providers\]\] "slow"\)$/,
      );
      assert(elapsedMs >= LIMIT_MS && elapsedMs < LIMIT_MS + SLACK_MS, `took ${elapsedMs} ms`);
      // Not retried: the server has the request and may still be working on it.
      assertEquals(server.requests.length, 1);
      await nextTurnWorks(slow);
      assertEquals(server.requests.length, 2);
    });
  });

  Deno.test(name("headers, some text, then a stall: idle_timeout"), async () => {
    const script = [format.hanging("partial"), format.text(["back again"])];
    await withScriptedServer(script, async (server) => {
      const slow = provider(format, server.url, { idle_timeout: LIMIT_MS });
      const { timeout, elapsedMs, texts } = await timedOutTurn(slow);
      assertEquals(texts, ["partial"]);
      assertEquals(timeout.phase, "idle");
      assertMatch(
        timeout.message,
        /the response stream from http:\S+ stalled: nothing arrived within 1 s \(idle_timeout of \[\[providers\]\] "slow"\)$/,
      );
      assert(elapsedMs >= LIMIT_MS && elapsedMs < LIMIT_MS + SLACK_MS, `took ${elapsedMs} ms`);
      // The stalled connection was closed, not left to the server.
      await server.cancelled;
      assertEquals(server.requests.length, 1);
      await nextTurnWorks(slow);
    });
  });

  Deno.test(name("a host that never completes the connect: connect_timeout, retried"), async () => {
    await withScriptedServer([format.text(["back again"])], async (server) => {
      await withBlackHole(async (blackHole) => {
        // The same provider (same URL) every time; the dialer decides whether the host is
        // reachable: black-holed for the first turn, back for the next.
        let reachable = false;
        const dials: number[] = [];
        const dial: Dialer = (target) => {
          const port = Number(new URL(reachable ? server.url : blackHole).port);
          dials.push(port);
          return defaultDialer({ ...target, host: "127.0.0.1", port });
        };
        const slow = provider(format, "http://coop-test.invalid:9", { connect_timeout: 200 }, dial);
        const { timeout, elapsedMs } = await timedOutTurn(slow);
        assertEquals(timeout.phase, "connect");
        assertEquals(timeout.timeoutMs, 200);
        assertMatch(
          timeout.message,
          /^provider "slow": gave up after 2 attempts: no connection to http:\/\/coop-test\.invalid:9\/\S+ within 200 ms \(connect_timeout of \[\[providers\]\] "slow"\)$/,
        );
        // Retried: nothing reached the server, so asking again is safe.
        assertEquals(dials.length, 2);
        assert(elapsedMs >= 400 && elapsedMs < 400 + SLACK_MS, `took ${elapsedMs} ms`);
        assertEquals(server.requests.length, 0);
        reachable = true;
        await nextTurnWorks(slow);
        assertEquals(server.requests.length, 1);
      });
    });
  });
}

Deno.test("the black hole really swallows connects (so the connect test tests connecting)", async () => {
  await withBlackHole(async (url) => {
    const socket = net.connect({ host: "127.0.0.1", port: Number(new URL(url).port) });
    const outcome = await Promise.race([
      new Promise((resolve) => socket.once("connect", () => resolve("connected"))),
      new Promise((resolve) => socket.once("error", (e) => resolve(`error: ${e.message}`))),
      new Promise((resolve) => setTimeout(() => resolve("still connecting"), 300)),
    ]);
    socket.destroy();
    assertEquals(outcome, "still connecting");
  });
});

Deno.test("cancelling while waiting for the headers ends at once, not at the timeout", async () => {
  await withScriptedServer([{ silent: true }], async (server) => {
    const controller = new AbortController();
    const slow = provider(WIRE_FORMATS[0], server.url, { first_byte_timeout: 60_000 });
    const started = performance.now();
    setTimeout(() => controller.abort(), 100);
    const result = await runTurn(turnOptions(slow, { signal: controller.signal }));
    assertEquals(result.stopReason, "cancelled");
    assert(performance.now() - started < SLACK_MS);
  });
});
