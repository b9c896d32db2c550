/**
 * The two wire formats as test fixtures: how each server streams text and tool calls, and how
 * each expects tool calls and results in the follow-up request. Provider tests run per format.
 * @module
 */
import type { ProviderKind } from "../../src/config/provider_kinds.ts";
import { dataEvents, namedEvents, type ScriptedReply, sseReply } from "./scripted_server.ts";

/** One wire format's fixtures. */
export interface WireFormat {
  kind: ProviderKind;
  /** The request path the provider must POST to (base_url is the server URL). */
  path: string;
  /** `base_url` for a server at `url`. */
  baseUrl(url: string): string;
  /** A reply streaming `parts` as text, then stopping normally. */
  text(parts: readonly string[], stop?: string): ScriptedReply;
  /** A reply with optional text, then one tool call whose JSON arguments arrive in `argParts`. */
  toolCall(id: string, name: string, argParts: readonly string[], text?: string): ScriptedReply;
  /** A reply that streams `text` and then stays open. */
  hanging(text: string): ScriptedReply;
  /** The wire messages after the system prompt in a request body. */
  messages(body: Record<string, unknown>): unknown[];
  /** How the assistant's tool call must look in the follow-up request. */
  wireToolCall(id: string, name: string, args: unknown, text?: string): unknown;
  /** How the tool result must look in the follow-up request. */
  wireToolResult(id: string, content: string, isError: boolean): unknown;
  /** The names of the tools offered in a request body. */
  toolNames(body: Record<string, unknown>): string[];
}

const anthropicStart = (inputTokens = 12) =>
  [
    "message_start",
    {
      type: "message_start",
      message: {
        id: "msg_1",
        type: "message",
        role: "assistant",
        content: [],
        model: "claude-test",
        stop_reason: null,
        usage: { input_tokens: inputTokens, output_tokens: 1 },
      },
    },
  ] as [string, unknown];

const anthropicTextBlock = (index: number, parts: readonly string[]): Array<[string, unknown]> => [
  [
    "content_block_start",
    { type: "content_block_start", index, content_block: { type: "text", text: "" } },
  ],
  ["ping", { type: "ping" }],
  ...parts.map((text) =>
    [
      "content_block_delta",
      { type: "content_block_delta", index, delta: { type: "text_delta", text } },
    ] as [string, unknown]
  ),
  ["content_block_stop", { type: "content_block_stop", index }],
];

const anthropicEnd = (stop: string, outputTokens = 7): Array<[string, unknown]> => [
  [
    "message_delta",
    {
      type: "message_delta",
      delta: { stop_reason: stop, stop_sequence: null },
      usage: { output_tokens: outputTokens },
    },
  ],
  ["message_stop", { type: "message_stop" }],
];

/** The Anthropic Messages API. */
export const ANTHROPIC: WireFormat = {
  kind: "anthropic",
  path: "/v1/messages",
  baseUrl: (url) => url,
  text: (parts, stop = "end_turn") =>
    sseReply(
      namedEvents([anthropicStart(), ...anthropicTextBlock(0, parts), ...anthropicEnd(stop)]),
    ),
  toolCall: (id, name, argParts, text) => {
    const index = text ? 1 : 0;
    return sseReply(namedEvents([
      anthropicStart(),
      ...(text ? anthropicTextBlock(0, [text]) : []),
      [
        "content_block_start",
        {
          type: "content_block_start",
          index,
          content_block: { type: "tool_use", id, name, input: {} },
        },
      ],
      ...argParts.map((partial_json) =>
        [
          "content_block_delta",
          {
            type: "content_block_delta",
            index,
            delta: { type: "input_json_delta", partial_json },
          },
        ] as [string, unknown]
      ),
      ["content_block_stop", { type: "content_block_stop", index }],
      ...anthropicEnd("tool_use"),
    ]));
  },
  hanging: (text) => ({
    ...sseReply(namedEvents([anthropicStart(), ...anthropicTextBlock(0, [text]).slice(0, 3)])),
    hang: true,
  }),
  messages: (body) => body.messages as unknown[],
  wireToolCall: (id, name, args, text) => ({
    role: "assistant",
    content: [
      ...(text ? [{ type: "text", text }] : []),
      { type: "tool_use", id, name, input: args },
    ],
  }),
  wireToolResult: (id, content, isError) => ({
    role: "user",
    content: [{
      type: "tool_result",
      tool_use_id: id,
      content,
      ...(isError ? { is_error: true } : {}),
    }],
  }),
  toolNames: (body) => ((body.tools ?? []) as Array<{ name: string }>).map((t) => t.name),
};

const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  created: 1,
  model: "gpt-test",
  choices: [{ index: 0, delta, finish_reason: finish }],
});

const usageChunk = {
  id: "chatcmpl-1",
  object: "chat.completion.chunk",
  choices: [],
  usage: { prompt_tokens: 12, completion_tokens: 7, total_tokens: 19 },
};

/** The OpenAI-compatible Chat Completions API. */
export const OPENAI: WireFormat = {
  kind: "openai_compatible",
  path: "/v1/chat/completions",
  baseUrl: (url) => `${url}/v1`,
  text: (parts, stop = "stop") =>
    sseReply(dataEvents([
      chunk({ role: "assistant", content: "" }),
      ...parts.map((content) => chunk({ content })),
      chunk({}, stop),
      usageChunk,
    ])),
  toolCall: (id, name, argParts, text) =>
    sseReply(dataEvents([
      chunk({ role: "assistant", content: text ?? null }),
      chunk({
        tool_calls: [{ index: 0, id, type: "function", function: { name, arguments: "" } }],
      }),
      ...argParts.map((args) =>
        chunk({ tool_calls: [{ index: 0, function: { arguments: args } }] })
      ),
      chunk({}, "tool_calls"),
      usageChunk,
    ])),
  hanging: (text) => ({
    ...sseReply(dataEvents([chunk({ role: "assistant", content: text })], false)),
    hang: true,
  }),
  messages: (body) => (body.messages as Array<{ role: string }>).filter((m) => m.role !== "system"),
  wireToolCall: (id, name, args, text) => ({
    role: "assistant",
    content: text ?? null,
    tool_calls: [{ id, type: "function", function: { name, arguments: JSON.stringify(args) } }],
  }),
  wireToolResult: (id, content) => ({ role: "tool", tool_call_id: id, content }),
  toolNames: (body) =>
    ((body.tools ?? []) as Array<{ function: { name: string } }>).map((t) => t.function.name),
};

/** Both formats, for table-driven tests. */
export const WIRE_FORMATS: readonly WireFormat[] = [ANTHROPIC, OPENAI];
