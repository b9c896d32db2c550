import { runTurn } from "../../src/agent/agent_loop.ts";
import type { RetryPolicy } from "../../src/agent/http_retry.ts";
import type { Provider, ProviderEvent } from "../../src/agent/provider.ts";
import { ProviderError } from "../../src/agent/provider_error.ts";
import { createProvider, type ProviderOptions } from "../../src/agent/provider_registry.ts";
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import {
  errorReply,
  type ScriptedServer,
  sseReply,
  withScriptedServer,
} from "./scripted_server.ts";
import { WIRE_FORMATS, type WireFormat } from "./wire_formats.ts";
import { withCapturedLogs } from "../fixtures/captured_logs.ts";

const FAST: RetryPolicy = { maxAttempts: 3, baseDelayMs: 1, maxDelayMs: 5_000 };

function provider(
  format: WireFormat,
  server: ScriptedServer,
  options: ProviderOptions & { key?: string | null } = {},
): Provider {
  const key = options.key === undefined ? "sk-test" : options.key;
  return createProvider(
    {
      name: "test",
      kind: format.kind,
      base_url: format.baseUrl(server.url),
      ...(key === null ? {} : { api_key_env: "TEST_KEY" }),
    },
    { env: () => key ?? undefined, retry: FAST, ...options },
  );
}

async function collect(stream: AsyncIterable<ProviderEvent>): Promise<ProviderEvent[]> {
  const events: ProviderEvent[] = [];
  for await (const event of stream) events.push(event);
  return events;
}

const REQUEST = {
  model: "test-model",
  system: "be brief",
  messages: [{ role: "user" as const, content: "hi" }],
  tools: [],
  maxTokens: 100,
};

for (const format of WIRE_FORMATS) {
  const name = (what: string) => `${format.kind}: ${what}`;

  Deno.test(name("streams text arriving in several SSE chunks"), async () => {
    await withScriptedServer([format.text(["Hel", "lo, ", "world"])], async (server) => {
      const events = await collect(provider(format, server).stream(REQUEST));
      const texts = events.filter((e) => e.type === "text").map((e) => e.text);
      assertEquals(texts, ["Hel", "lo, ", "world"]);
      assertEquals(events.at(-1), {
        type: "stop",
        reason: "end_turn",
        usage: { inputTokens: 12, outputTokens: 7 },
      });
      const [request] = server.requests;
      assertEquals(request.path, format.path);
      assertEquals(request.body.stream, true);
      assertEquals(request.body.model, "test-model");
      if (format.kind === "anthropic") {
        assertEquals(request.headers.get("x-api-key"), "sk-test");
        assertEquals(request.headers.get("anthropic-version"), "2023-06-01");
        assertEquals(request.body.system, "be brief");
        assertEquals(request.body.max_tokens, 100);
      } else {
        assertEquals(request.headers.get("authorization"), "Bearer sk-test");
        assertEquals((request.body.messages as unknown[])[0], {
          role: "system",
          content: "be brief",
        });
        assertEquals(request.body.max_tokens, 100);
      }
      assertEquals(request.headers.get("content-type"), "application/json");
    });
  });

  Deno.test(
    name("a tool call split across deltas runs; the result goes back verbatim"),
    async () => {
      const script = [
        format.toolCall("call_1", "bash", ['{"comm', 'and": "ls', ' -la"}'], "Let me look."),
        format.text(["Two files."]),
      ];
      await withScriptedServer(script, async (server) => {
        const calls: Array<[string, unknown]> = [];
        const result = await runTurn({
          provider: provider(format, server),
          model: "m",
          system: "sys",
          history: [],
          userText: "what is here?",
          tools: [{
            name: "bash",
            description: "run",
            parameters: { type: "object" },
            sandboxed: true,
          }],
          executeTool: (tool, args) => {
            calls.push([tool, args]);
            return Promise.resolve({
              content: "a.txt\nb.txt\n[exit code 0]",
              isError: false,
              sandboxed: true,
              exitCode: 0,
            });
          },
          maxIterations: 5,
        });
        assertEquals(calls, [["bash", { command: "ls -la" }]]);
        assertEquals(server.requests.length, 2);
        assertEquals(format.toolNames(server.requests[0].body), ["bash"]);
        assertEquals(format.messages(server.requests[1].body), [
          format.kind === "anthropic"
            ? { role: "user", content: [{ type: "text", text: "what is here?" }] }
            : { role: "user", content: "what is here?" },
          format.wireToolCall("call_1", "bash", { command: "ls -la" }, "Let me look."),
          format.wireToolResult("call_1", "a.txt\nb.txt\n[exit code 0]", false),
        ]);
        assertEquals(result.reply, "Let me look.\n\nTwo files.");
        assertEquals(result.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        assertEquals(result.stopReason, "end_turn");
        assertEquals(result.messages.length, 3);
      });
    },
  );

  Deno.test(name("429 then 200: retried after the server's retry-after"), async () => {
    const delays: number[] = [];
    const script = [errorReply(429, "slow down", { "retry-after": "2" }), format.text(["ok"])];
    await withScriptedServer(script, async (server) => {
      const sleep = (ms: number) => {
        delays.push(ms);
        return Promise.resolve();
      };
      const events = await collect(provider(format, server, { http: { sleep } }).stream(REQUEST));
      assertEquals(events[0], { type: "text", text: "ok" });
      assertEquals(server.requests.length, 2);
      assertEquals(delays, [2000]);
    });
  });

  Deno.test(name("500 on every attempt: gives up after the bounded attempts"), async () => {
    const delays: number[] = [];
    const script = [1, 2, 3, 4].map(() => errorReply(500, "boom"));
    await withScriptedServer(script, async (server) => {
      const sleep = (ms: number) => {
        delays.push(ms);
        return Promise.resolve();
      };
      const error = await assertRejects(
        () => collect(provider(format, server, { http: { sleep } }).stream(REQUEST)),
        ProviderError,
      );
      assertEquals(error.code, "provider.unavailable");
      assertMatch(error.message, /^provider "test": gave up after 3 attempts: HTTP 500: boom$/);
      assertEquals(server.requests.length, 3);
      // Exponential with jitter: each wait within [half, full] of 1 ms, 2 ms.
      assertEquals(delays.length, 2);
      assert(delays[0] >= 0.5 && delays[0] <= 1 && delays[1] >= 1 && delays[1] <= 2);
    });
  });

  Deno.test(name("401 is not retried and says to check the key"), async () => {
    await withScriptedServer([errorReply(401, "invalid x-api-key")], async (server) => {
      const error = await assertRejects(
        () => collect(provider(format, server).stream(REQUEST)),
        ProviderError,
      );
      assertEquals(error.code, "provider.auth");
      assertEquals(error.status, 401);
      assertMatch(error.message, /HTTP 401: invalid x-api-key.*api_key_env/);
      assertEquals(server.requests.length, 1);
    });
  });

  Deno.test(name("a key the server echoes back reaches no error and no log line"), async () => {
    const key = "sk-live-0123456789abcdefECHOED";
    const script = [
      errorReply(500, `upstream rejected Bearer ${key}`),
      errorReply(502, `key ${encodeURIComponent(key)} is over quota`),
      errorReply(401, `invalid x-api-key: ${key}`),
    ];
    await withCapturedLogs(async (records) => {
      await withScriptedServer(script, async (server) => {
        const error = await assertRejects(
          () => collect(provider(format, server, { key }).stream(REQUEST)),
          ProviderError,
        );
        assertEquals(error.code, "provider.auth");
        assertMatch(error.message, /HTTP 401: invalid x-api-key: <redacted>/);
        assertEquals(server.requests.length, 3);
      });
      const retries = records.filter((r) => String(r.rawMessage).startsWith("provider.retry"));
      assertEquals(retries.length, 2, "both retries were logged");
      for (const record of records) {
        const text = JSON.stringify([record.message, record.properties]);
        assert(!text.includes(key), `a log line carries the key: ${text}`);
        assert(!text.includes(encodeURIComponent(key)), `a log line carries the key: ${text}`);
      }
    });
  });

  Deno.test(name("a key echoed in a mid-stream error is redacted"), async () => {
    const key = "sk-live-0123456789abcdefECHOED";
    const body = format.kind === "anthropic"
      ? `event: error\ndata: {"type":"error","error":{"type":"x","message":"bad key ${key}"}}\n\n`
      : `data: {"error":{"message":"bad key ${key}"}}\n\n`;
    await withScriptedServer([sseReply(body)], async (server) => {
      const error = await assertRejects(
        () => collect(provider(format, server, { key }).stream(REQUEST)),
        ProviderError,
      );
      assertEquals(error.code, "provider.stream");
      assertMatch(error.message, /bad key <redacted>/);
      assert(!error.message.includes(key));
    });
  });

  Deno.test(name("a retry-after longer than the longest wait gives up at once"), async () => {
    await withScriptedServer([errorReply(503, "busy", { "retry-after": "3600" })], async (s) => {
      const error = await assertRejects(
        () => collect(provider(format, s).stream(REQUEST)),
        ProviderError,
      );
      assertEquals(error.code, "provider.unavailable");
      assertMatch(error.message, /asked to wait 3600 s/);
      assertEquals(s.requests.length, 1);
    });
  });

  Deno.test(name("a stream that is not JSON is a malformed-response error"), async () => {
    const script = [sseReply("event: message_start\ndata: {not json\n\ndata: {nope\n\n")];
    await withScriptedServer(script, async (server) => {
      const error = await assertRejects(
        () => collect(provider(format, server).stream(REQUEST)),
        ProviderError,
      );
      assertEquals(error.code, "provider.malformed");
      assertEquals(server.requests.length, 1);
    });
  });

  Deno.test(name("a stream that ends early is malformed, not a silent empty reply"), async () => {
    const truncated = format.hanging("partial");
    await withScriptedServer([{ ...truncated, hang: false }], async (server) => {
      const error = await assertRejects(
        () => collect(provider(format, server).stream(REQUEST)),
        ProviderError,
      );
      assertEquals(error.code, "provider.malformed");
      assertMatch(error.message, /ended before/);
    });
  });

  Deno.test(name("an error event mid-stream is reported and not retried"), async () => {
    const body = format.kind === "anthropic"
      ? 'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
      : 'data: {"error":{"message":"Overloaded"}}\n\n';
    await withScriptedServer([sseReply(body)], async (server) => {
      const error = await assertRejects(
        () => collect(provider(format, server).stream(REQUEST)),
        ProviderError,
      );
      assertEquals(error.code, "provider.stream");
      assertMatch(error.message, /Overloaded/);
      assertEquals(server.requests.length, 1);
    });
  });

  Deno.test(name("a refused connection is retried, then reported"), async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const p = createProvider(
      { name: "test", kind: format.kind, base_url: `http://127.0.0.1:${port}/v1` },
      { retry: FAST },
    );
    const error = await assertRejects(() => collect(p.stream(REQUEST)), ProviderError);
    assertEquals(error.code, "provider.unavailable");
    assertMatch(error.message, /gave up after 3 attempts: cannot reach http:\/\/127\.0\.0\.1/);
  });

  Deno.test(name("aborting mid-stream stops the request"), async () => {
    await withScriptedServer([format.hanging("thinking")], async (server) => {
      const controller = new AbortController();
      const events: ProviderEvent[] = [];
      const error = await assertRejects(async () => {
        for await (const event of provider(format, server).stream(REQUEST, controller.signal)) {
          events.push(event);
          controller.abort(new DOMException("stop", "AbortError"));
        }
      }, DOMException);
      assertEquals(error.name, "AbortError");
      assertEquals(events, [{ type: "text", text: "thinking" }]);
      await server.cancelled;
    });
  });
}

Deno.test("missing key: a clear error naming the provider and the variable", () => {
  try {
    createProvider(
      { name: "anthropic", kind: "anthropic", api_key_env: "ANTHROPIC_API_KEY" },
      { env: () => undefined },
    );
    throw new Error("expected a missing-key error");
  } catch (error) {
    assert(error instanceof ProviderError);
    assertEquals(error.code, "provider.missing_key");
    assertEquals(
      error.message,
      'provider "anthropic": environment variable ANTHROPIC_API_KEY is not set',
    );
  }
});

Deno.test("openai-compatible without api_key_env sends no Authorization header", async () => {
  const format = WIRE_FORMATS[1];
  await withScriptedServer([format.text(["hi"])], async (server) => {
    await collect(provider(format, server, { key: null }).stream(REQUEST));
    assertEquals(server.requests[0].headers.get("authorization"), null);
  });
});

Deno.test("kind openai sends max_completion_tokens, other compatible kinds max_tokens", async () => {
  const format = WIRE_FORMATS[1];
  await withScriptedServer([format.text(["a"]), format.text(["b"])], async (server) => {
    for (const kind of ["openai", "ollama"] as const) {
      const p = createProvider({ name: "o", kind, base_url: `${server.url}/v1` });
      await collect(p.stream(REQUEST));
    }
    assertEquals(server.requests[0].body.max_completion_tokens, 100);
    assertEquals(server.requests[0].body.max_tokens, undefined);
    assertEquals(server.requests[1].body.max_tokens, 100);
  });
});
