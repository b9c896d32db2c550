/** Session rows ↔ chat messages, and the repair of a history cut by a crash or the limit. */
import type { ChatMessage } from "../../src/agent/provider.ts";
import {
  chatHistory,
  INTERRUPTED_RESULT,
  toSessionMessage,
} from "../../src/gateway/chat_history.ts";
import type { StoredMessage } from "../../src/state/session_store.ts";
import { assertEquals } from "../assert.ts";

let nextId = 1;
function stored(message: ChatMessage): StoredMessage {
  return { ...toSessionMessage(message, "bob", "full"), id: nextId++, createdAt: 0 };
}

const call = (id: string) => ({ id, name: "bash", arguments: { command: "ls" } });
const result = (id: string, content = "ok") => ({
  toolCallId: id,
  name: "bash",
  content,
  isError: false,
});

Deno.test("chat history: a complete conversation round-trips unchanged", () => {
  const messages: ChatMessage[] = [
    { role: "user", content: "list" },
    { role: "assistant", text: "Looking.", toolCalls: [call("a"), call("b")] },
    { role: "tool", results: [result("a"), result("b")] },
    { role: "assistant", text: "Two files.", toolCalls: [] },
  ];
  assertEquals(chatHistory(messages.map(stored)), messages);
});

Deno.test("chat history: tool calls whose results were never stored get an interrupted result", () => {
  const rows = [
    { role: "user", content: "list" },
    { role: "assistant", text: "", toolCalls: [call("a")] },
  ] satisfies ChatMessage[];
  assertEquals(chatHistory(rows.map(stored)), [
    ...rows,
    {
      role: "tool",
      results: [{ toolCallId: "a", name: "bash", content: INTERRUPTED_RESULT, isError: true }],
    },
  ]);
  // Also mid-history, before the next user message.
  const middle = chatHistory(
    [...rows, { role: "user", content: "again?" } as ChatMessage].map(stored),
  );
  assertEquals(middle.map((m) => m.role), ["user", "assistant", "tool", "user"]);
});

Deno.test("chat history: a partial result set is completed, in the order of the calls", () => {
  const rows: ChatMessage[] = [
    { role: "user", content: "two" },
    { role: "assistant", text: "", toolCalls: [call("a"), call("b")] },
    { role: "tool", results: [result("b", "B")] },
  ];
  const repaired = chatHistory(rows.map(stored));
  assertEquals(repaired[2], {
    role: "tool",
    results: [
      { toolCallId: "a", name: "bash", content: INTERRUPTED_RESULT, isError: true },
      result("b", "B"),
    ],
  });
});

Deno.test("chat history: a window cut by the limit starts at a user message, orphans dropped", () => {
  const rows: ChatMessage[] = [
    { role: "tool", results: [result("z")] },
    { role: "assistant", text: "Done.", toolCalls: [] },
    { role: "user", content: "next" },
    { role: "tool", results: [result("q")] },
    { role: "assistant", text: "Sure.", toolCalls: [] },
  ];
  assertEquals(chatHistory(rows.map(stored)), [
    { role: "user", content: "next" },
    { role: "assistant", text: "Sure.", toolCalls: [] },
  ]);
  assertEquals(chatHistory([]), []);
});

Deno.test("chat history: rows with unexpected content are skipped, not thrown on", () => {
  const bad: StoredMessage = {
    id: 99,
    createdAt: 0,
    role: "user",
    content: { not: "a string" },
    principal: "bob",
    trust: "full",
  };
  assertEquals(chatHistory([bad, stored({ role: "user", content: "fine" })]), [
    { role: "user", content: "fine" },
  ]);
});
