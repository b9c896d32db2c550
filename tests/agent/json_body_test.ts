import { anthropicRequestBody, toAnthropicMessages } from "../../src/agent/anthropic.ts";
import { JsonCache, JsonText, stringifyBody } from "../../src/agent/json_body.ts";
import { openAiRequestBody } from "../../src/agent/openai.ts";
import type { ChatMessage, ProviderRequest, ToolSpec } from "../../src/agent/provider.ts";
import { assertEquals } from "../assert.ts";

const TOOLS: ToolSpec[] = [
  {
    name: "bash",
    description: "Run a command",
    parameters: { type: "object", properties: { command: { type: "string" } } },
  },
  { name: "read_file", description: "Read a file", parameters: { type: "object" } },
];

/** A conversation with every merge and edge `toAnthropicMessages` handles. */
const CONVERSATION: ChatMessage[] = [
  { role: "user", content: 'first "quoted" \u2028 text' },
  { role: "assistant", text: "", toolCalls: [] }, // no blocks: skipped, neighbours merge
  { role: "user", content: "second" },
  {
    role: "assistant",
    text: "looking",
    toolCalls: [
      { id: "t1", name: "bash", arguments: { command: "ls" } },
      { id: "t2", name: "read_file", arguments: undefined as unknown as Record<string, unknown> },
    ],
  },
  {
    role: "tool",
    results: [
      { toolCallId: "t1", name: "bash", content: "a\nb", isError: false },
      { toolCallId: "t2", name: "read_file", content: "refused", isError: true },
    ],
  },
  { role: "user", content: "after the results: merged into their user message" },
];

function request(messages: ChatMessage[], tools: readonly ToolSpec[] = TOOLS): ProviderRequest {
  return { model: "m", system: "be brief", messages, tools, maxTokens: 100 };
}

Deno.test("stringifyBody: JSON.stringify's output, JsonText spliced as it is", () => {
  for (const body of [null, "s", 3, [1, { a: 2 }], { a: 1, b: undefined, c: [true] }]) {
    assertEquals(stringifyBody(body), JSON.stringify(body));
  }
  const body = { a: 1, skip: undefined, f: () => 1, raw: new JsonText('[{"x":"y"}]'), z: "é" };
  assertEquals(stringifyBody(body), '{"a":1,"raw":[{"x":"y"}],"z":"é"}');
  assertEquals(stringifyBody(body), JSON.stringify(body), "JsonText.toJSON gives the same JSON");
});

Deno.test("JsonCache serializes once per key", () => {
  const cache = new JsonCache<object>();
  const key = {};
  let made = 0;
  const make = () => ({ made: ++made });
  assertEquals(cache.text(key, make), '{"made":1}');
  assertEquals(cache.text(key, make), '{"made":1}');
  assertEquals(cache.text({}, make), '{"made":2}');
});

Deno.test("anthropic: the body sent is the plain mapping's JSON, call after call of a turn", () => {
  const conversation: ChatMessage[] = [];
  for (const message of CONVERSATION) {
    conversation.push(message);
    const sent = stringifyBody(anthropicRequestBody(request(conversation)));
    const plain = JSON.stringify({
      model: "m",
      max_tokens: 100,
      system: "be brief",
      messages: toAnthropicMessages(conversation),
      stream: true,
      tools: TOOLS.map((t) => ({
        name: t.name,
        description: t.description,
        input_schema: t.parameters,
      })),
    });
    assertEquals(sent, plain);
  }
  const noTools = stringifyBody(anthropicRequestBody(request(CONVERSATION, [])));
  assertEquals(JSON.parse(noTools).tools, undefined);
});

Deno.test("openai: the tools sent are the plain mapping's JSON", () => {
  for (const field of ["max_tokens", "max_completion_tokens"] as const) {
    const body = openAiRequestBody(request(CONVERSATION), field);
    const sent = stringifyBody(body);
    assertEquals(sent, JSON.stringify(body));
    assertEquals(
      JSON.parse(sent).tools,
      TOOLS.map((t) => ({
        type: "function",
        function: { name: t.name, description: t.description, parameters: t.parameters },
      })),
    );
  }
});
