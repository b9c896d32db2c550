import { runTurn, type TurnResult } from "../../src/agent/agent_loop.ts";
import { createProvider } from "../../src/agent/provider_registry.ts";
import {
  completeToolCall,
  MAX_TOOL_ARGUMENT_BYTES,
  ToolCallAccumulator,
} from "../../src/agent/tool_call_accumulator.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { type ScriptedReply, splitEvery, withScriptedServer } from "./scripted_server.ts";
import { sandboxedTool, turnOptions } from "./turn_fixture.ts";
import { WIRE_FORMATS, type WireFormat } from "./wire_formats.ts";

/** The same reply in 64 KiB chunks (the default small chunks would take seconds for 300 KiB). */
const bigChunks = (reply: ScriptedReply): ScriptedReply => ({
  ...reply,
  chunks: splitEvery(reply.chunks!.join(""), 64 * 1024),
});

/** Runs a turn whose first response is `first` and second says "fixed"; no tool may run. */
async function turnWith(
  format: WireFormat,
  first: ScriptedReply,
): Promise<{ result: TurnResult; followUp: unknown[] }> {
  let runs = 0;
  let result: TurnResult | undefined;
  let followUp: unknown[] = [];
  await withScriptedServer([first, format.text(["fixed"])], async (server) => {
    const provider = createProvider({
      name: "p",
      kind: format.kind,
      base_url: format.baseUrl(server.url),
    });
    result = await runTurn(turnOptions(provider, {
      tools: [sandboxedTool("write_file")],
      executeTool: () => {
        runs++;
        return Promise.resolve({ content: "written", isError: false, sandboxed: true });
      },
    }));
    assertEquals(server.requests.length, 2, "the turn went on after the tool error");
    followUp = format.messages(server.requests[1].body);
  });
  assertEquals(runs, 0, "a call with unusable arguments never reaches the executor");
  return { result: result!, followUp };
}

for (const format of WIRE_FORMATS) {
  const name = (what: string) => `${format.kind}: ${what}`;

  Deno.test(
    name("invalid JSON arguments: the model reads a tool error, the turn goes on"),
    async () => {
      const first = format.toolCall("call_1", "write_file", ['{"path": "a.txt", ', '"content": ']);
      const { result, followUp } = await turnWith(format, first);
      assertEquals(result.reply, "fixed");
      assertEquals(result.stopReason, "end_turn");
      assertEquals(result.tools, [{ name: "write_file", sandboxed: false, exitCode: null }]);
      const results = result.messages[1];
      assert(results.role === "tool");
      const [answer] = results.results;
      assertEquals(answer.isError, true);
      assertMatch(answer.content, /^invalid JSON in tool arguments: .+; the call was not run/);
      // What goes back: the call with empty arguments (both APIs insist on an object), then the
      // error as its result.
      assertEquals(followUp.slice(1), [
        format.wireToolCall("call_1", "write_file", {}),
        format.wireToolResult("call_1", answer.content, true),
      ]);
    },
  );

  Deno.test(name("arguments over 256 KiB: a tool error, not parsed, not kept"), async () => {
    const content = "x".repeat(300 * 1024);
    const args = JSON.stringify({ path: "big.txt", content });
    const first = bigChunks(
      format.toolCall("call_2", "write_file", [args.slice(0, 10), args.slice(10)]),
    );
    const { result, followUp } = await turnWith(format, first);
    assertEquals(result.reply, "fixed");
    const results = result.messages[1];
    assert(results.role === "tool");
    assertEquals(
      results.results[0].content,
      `tool arguments too large: ${args.length} bytes, more than the 262144 bytes (256 KiB) ` +
        "Coop accepts; the call was not run — split the work into smaller calls (e.g. write a " +
        "large file in parts)",
    );
    assertEquals(followUp[1], format.wireToolCall("call_2", "write_file", {}));
  });
}

Deno.test("the cap counts UTF-8 bytes, up to and including the limit", () => {
  const accumulator = new ToolCallAccumulator(10);
  const fits = accumulator.start(0, "a", "t");
  accumulator.appendArguments(fits, '"éééé"'); // 6 characters, 10 bytes
  assertEquals(accumulator.take(0), { id: "a", name: "t", arguments: "éééé" });
  const over = accumulator.start(1, "b", "t");
  accumulator.appendArguments(over, '"éééé');
  accumulator.appendArguments(over, 'x"');
  assertEquals(over.json, "", "text beyond the cap is not kept");
  assertEquals(over.bytes, 11);
  assertMatch(accumulator.take(1)!.argumentsError!, /^tool arguments too large: 11 bytes/);
  assertEquals(MAX_TOOL_ARGUMENT_BYTES, 256 * 1024);
});

Deno.test("no argument text is an empty object; valid JSON of any shape passes", () => {
  const call = (json: string) => completeToolCall({ id: "i", name: "t", json, bytes: json.length });
  assertEquals(call(""), { id: "i", name: "t", arguments: {} });
  assertEquals(call("  "), { id: "i", name: "t", arguments: {} });
  assertEquals(call("[1]"), { id: "i", name: "t", arguments: [1] });
  assertEquals(call("{").arguments, {});
  assertMatch(call("{").argumentsError!, /^invalid JSON in tool arguments: /);
});
