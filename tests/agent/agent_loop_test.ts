import {
  type AgentEvent,
  type AgentTool,
  iterationCapNote,
  runTurn,
  TurnError,
  type TurnOptions,
} from "../../src/agent/agent_loop.ts";
import type { ChatMessage } from "../../src/agent/provider.ts";
import { ProviderError } from "../../src/agent/provider_error.ts";
import { createProvider } from "../../src/agent/provider_registry.ts";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { callsTool, FakeProvider, says } from "./fake_provider.ts";
import { withScriptedServer } from "./scripted_server.ts";
import { ANTHROPIC } from "./wire_formats.ts";

const BASH: AgentTool = {
  name: "bash",
  description: "run a command",
  parameters: { type: "object" },
  sandboxed: true,
};

function options(provider: FakeProvider, extra: Partial<TurnOptions> = {}): TurnOptions {
  return {
    provider,
    model: "m",
    system: "sys",
    history: [],
    userText: "go",
    tools: [BASH],
    executeTool: () =>
      Promise.resolve({ content: "done", isError: false, sandboxed: true, exitCode: 0 }),
    maxIterations: 10,
    ...extra,
  };
}

/** Every assistant tool call is answered by the next message, as both APIs require. */
function assertValidHistory(messages: readonly ChatMessage[]): void {
  messages.forEach((m, i) => {
    if (m.role !== "assistant" || m.toolCalls.length === 0) return;
    const next = messages[i + 1];
    assert(next?.role === "tool", `message ${i + 1} must hold the tool results`);
    assertEquals(next.results.map((r) => r.toolCallId), m.toolCalls.map((c) => c.id));
  });
}

Deno.test("history and the user's text are sent; events stream in order", async () => {
  const provider = new FakeProvider([callsTool("t1", "bash", { command: "ls" }), says("Done.")]);
  const events: AgentEvent[] = [];
  const history: ChatMessage[] = [
    { role: "user", content: "earlier" },
    { role: "assistant", text: "reply", toolCalls: [] },
  ];
  const result = await runTurn(options(provider, { history, onEvent: (e) => events.push(e) }));
  assertEquals(provider.requests[0].messages, [...history, { role: "user", content: "go" }]);
  assertEquals(provider.requests[0].tools, [{
    name: "bash",
    description: "run a command",
    parameters: { type: "object" },
  }]);
  assertEquals(events, [
    { type: "tool_start", name: "bash", sandboxed: true, summary: "ls" },
    { type: "tool_end", name: "bash", sandboxed: true, exitCode: 0, isError: false },
    { type: "text", text: "Done." },
  ]);
  assertEquals(result.reply, "Done.");
  assertEquals(result.usage, { inputTokens: 20, outputTokens: 10 });
  assertValidHistory(result.messages);
});

Deno.test("the iteration cap stops a model that never stops calling tools", async () => {
  const provider = new FakeProvider([callsTool("t", "bash", { command: "again" })]);
  let runs = 0;
  const result = await runTurn(options(provider, {
    maxIterations: 3,
    executeTool: () => {
      runs++;
      return Promise.resolve({ content: "ok", isError: false, sandboxed: true, exitCode: 0 });
    },
  }));
  assertEquals(provider.requests.length, 3);
  assertEquals(runs, 2);
  assertEquals(result.stopReason, "max_iterations");
  assertEquals(result.reply, iterationCapNote(3));
  assertEquals(result.tools.length, 2);
  const last = result.messages.at(-1);
  assert(last?.role === "tool");
  assertEquals(last.results[0].content, "not run: the turn reached its iteration limit");
  assertValidHistory(result.messages);
});

Deno.test("a tool that was not offered never reaches the executor", async () => {
  const provider = new FakeProvider([callsTool("t1", "bash", { command: "id" }), says("ok")]);
  let runs = 0;
  const result = await runTurn(options(provider, {
    tools: [],
    executeTool: () => {
      runs++;
      return Promise.reject(new Error("must not run"));
    },
  }));
  assertEquals(runs, 0);
  assertEquals(provider.requests[0].tools, []);
  const results = result.messages[1];
  assert(results.role === "tool");
  assertEquals(results.results[0], {
    toolCallId: "t1",
    name: "bash",
    content: 'tool "bash" is not available in this conversation',
    isError: true,
  });
  assertEquals(result.tools, [{ name: "bash", sandboxed: false, exitCode: null }]);
});

Deno.test("cancelling during a tool passes the signal on and stops the turn", async () => {
  const provider = new FakeProvider([callsTool("t1", "bash", { command: "sleep 99" })]);
  const controller = new AbortController();
  let toolSignal: AbortSignal | undefined;
  const result = await runTurn(options(provider, {
    signal: controller.signal,
    onEvent: (e) => {
      if (e.type === "tool_start") setTimeout(() => controller.abort(), 10);
    },
    executeTool: (_name, _args, signal) => {
      toolSignal = signal;
      // Like the executor: the killed command comes back as a result.
      return new Promise((resolve) =>
        signal.addEventListener("abort", () =>
          resolve({
            content: "[killed by SIGKILL]\n[exit code 137]",
            isError: true,
            sandboxed: true,
            exitCode: 137,
          }))
      );
    },
  }));
  assert(toolSignal?.aborted);
  assertEquals(result.stopReason, "cancelled");
  assertEquals(provider.requests.length, 1);
  assertEquals(result.tools, [{ name: "bash", sandboxed: true, exitCode: 137 }]);
  assertValidHistory(result.messages);
});

Deno.test("cancelling stops waiting even for a tool that ignores the signal", async () => {
  const provider = new FakeProvider([callsTool("t1", "bash", { command: "x" })]);
  const controller = new AbortController();
  const started = performance.now();
  let release = () => {};
  const result = await runTurn(options(provider, {
    signal: controller.signal,
    onEvent: (e) => {
      if (e.type === "tool_start") setTimeout(() => controller.abort(), 10);
    },
    executeTool: () =>
      new Promise((resolve) => {
        release = () => resolve({ content: "late", isError: false, sandboxed: true });
      }),
  }));
  release();
  assert(performance.now() - started < 5000);
  assertEquals(result.stopReason, "cancelled");
  const results = result.messages[1];
  assert(results.role === "tool");
  assertEquals(results.results[0].isError, true);
  assertValidHistory(result.messages);
});

Deno.test("cancelling mid-stream keeps the text shown so far and closes the stream", async () => {
  await withScriptedServer([ANTHROPIC.hanging("Thinking")], async (server) => {
    const controller = new AbortController();
    const provider = createProvider({ name: "a", kind: "anthropic", base_url: server.url });
    const result = await runTurn({
      ...options(new FakeProvider([])),
      provider,
      signal: controller.signal,
      onEvent: (e) => {
        if (e.type === "text") controller.abort();
      },
    });
    await server.cancelled;
    assertEquals(result.stopReason, "cancelled");
    assertEquals(result.reply, "Thinking");
    assertEquals(result.messages, [{ role: "assistant", text: "Thinking", toolCalls: [] }]);
  });
});

Deno.test("a provider failure mid-turn is a TurnError carrying the completed messages", async () => {
  const provider = new FakeProvider([callsTool("t1", "bash", { command: "ls" })]);
  let calls = 0;
  const failing = {
    name: "flaky",
    stream(...args: Parameters<FakeProvider["stream"]>) {
      if (++calls === 2) {
        throw new ProviderError("provider.unavailable", "flaky", "gave up after 4 attempts");
      }
      return provider.stream(...args);
    },
  };
  const error = await assertRejects(
    () => runTurn({ ...options(provider), provider: failing }),
    TurnError,
  );
  assertEquals(error.code, "provider.unavailable");
  assertEquals(error.message, 'provider "flaky": gave up after 4 attempts');
  assertEquals(error.messages.length, 2);
  assertValidHistory(error.messages);
});

Deno.test("max_tokens is reported as the stop reason", async () => {
  const provider = new FakeProvider([[
    { type: "text", text: "cut" },
    { type: "stop", reason: "max_tokens", usage: null },
  ]]);
  const result = await runTurn(options(provider));
  assertEquals(result.stopReason, "max_tokens");
  assertEquals(result.reply, "cut");
});
