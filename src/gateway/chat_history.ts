/**
 * Converts between the agent's `ChatMessage` and the session store's rows, and repairs a
 * history read back after a crash so that providers accept it.
 * @module
 */
import type { ChatMessage, ToolCallRequest, ToolResultContent } from "../agent/provider.ts";
import type { TrustLevel } from "../trust/trust_level.ts";
import type { JsonValue, SessionMessage, StoredMessage } from "../state/session_store.ts";

/** The result given to a tool call whose result was never stored (the gateway stopped). */
export const INTERRUPTED_RESULT =
  "interrupted: the gateway stopped before this tool call finished; it may or may not have run";

/** The stored form of a message: the role plus everything else as JSON. */
export function toSessionMessage(
  message: ChatMessage,
  principal: string,
  trust: TrustLevel,
): SessionMessage {
  const { role, ...rest } = message;
  const content = (role === "user" ? message.content : rest) as unknown as JsonValue;
  return { role, content, principal, trust };
}

function fromStored(stored: StoredMessage): ChatMessage | null {
  const content = stored.content as Record<string, unknown> | string | null;
  if (stored.role === "user") {
    return typeof content === "string" ? { role: "user", content } : null;
  }
  if (content === null || typeof content !== "object") return null;
  if (stored.role === "assistant") {
    return {
      role: "assistant",
      text: typeof content.text === "string" ? content.text : "",
      toolCalls: Array.isArray(content.toolCalls) ? content.toolCalls as ToolCallRequest[] : [],
    };
  }
  return Array.isArray(content.results)
    ? { role: "tool", results: content.results as ToolResultContent[] }
    : null;
}

/**
 * Rebuilds the conversation from stored rows (oldest first). The result always starts with a
 * user message and gives every tool call exactly one result: rows cut off by the history limit
 * are dropped from the front, and tool calls whose results were never stored (a crash mid-turn)
 * get `INTERRUPTED_RESULT`.
 */
export function chatHistory(rows: readonly StoredMessage[]): ChatMessage[] {
  const messages = rows.map(fromStored).filter((m): m is ChatMessage => m !== null);
  const first = messages.findIndex((m) => m.role === "user");
  if (first < 0) return [];
  const out: ChatMessage[] = [];
  for (const message of messages.slice(first)) {
    const previous = out.at(-1);
    const pending = previous?.role === "assistant" ? previous.toolCalls : [];
    if (message.role === "tool") {
      // Results only belong right after the calls they answer.
      if (pending.length === 0) continue;
      const answered = new Map(message.results.map((r) => [r.toolCallId, r]));
      out.push({
        role: "tool",
        results: pending.map((call) => answered.get(call.id) ?? interrupted(call)),
      });
      continue;
    }
    if (pending.length > 0) out.push({ role: "tool", results: pending.map(interrupted) });
    out.push(message);
  }
  const last = out.at(-1);
  if (last?.role === "assistant" && last.toolCalls.length > 0) {
    out.push({ role: "tool", results: last.toolCalls.map(interrupted) });
  }
  return out;
}

function interrupted(call: ToolCallRequest): ToolResultContent {
  return { toolCallId: call.id, name: call.name, content: INTERRUPTED_RESULT, isError: true };
}
