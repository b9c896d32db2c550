/**
 * The memory tools: `memory_write`, `memory_search`, `memory_get` and `memory_forget`. They run in the gateway, never in a sandbox;
 * which stores a call may touch is decided by the `MemoryAccess` the executor hands them.
 * @module
 */
import { z } from "zod";
import {
  type MemoryAccess,
  parseToolArguments,
  type Tool,
  type ToolContext,
  ToolError,
  type ToolResult,
} from "./tool_contract.ts";
import { MEMORY_STORE_NAMES } from "../trust/trust_level.ts";
import type { MemoryHit } from "../state/memory_store.ts";
import { truncateHeadTail } from "./truncation.ts";

/** The longest text one memory may hold. */
export const MAX_MEMORY_CHARS = 4000;

/** The most results one search returns. */
export const MAX_MEMORY_RESULTS = 20;

const writeArguments = z.strictObject({
  store: z.enum(MEMORY_STORE_NAMES),
  text: z.string().trim().min(1, "must not be empty").max(
    MAX_MEMORY_CHARS,
    `must be at most ${MAX_MEMORY_CHARS} characters`,
  ),
});

const searchArguments = z.strictObject({
  query: z.string().trim().min(1, "must not be empty").max(500, "must be at most 500 characters"),
  limit: z.number().int().min(1).max(MAX_MEMORY_RESULTS).optional(),
});

const idArguments = z.strictObject({ id: z.number().int().min(1) });

function memoryOf(tool: string, context: ToolContext): MemoryAccess {
  if (!context.memory) {
    throw new ToolError("tool.memory_unavailable", `${tool}: memory is not available here`);
  }
  return context.memory;
}

/** The `memory_write` tool. */
export const memoryWriteTool: Tool = {
  name: "memory_write",
  description: "Remember a fact for later conversations. `store` is who may read it: " +
    '"personal" (only the person you are talking with, and the owner), ' +
    '"private" (the owner and fully trusted users), "shared" (also close contacts) or ' +
    '"social" (also known contacts). You may only write to stores allowed for this conversation.',
  parameters: z.toJSONSchema(writeArguments) as Record<string, unknown>,
  readOnly: false,
  run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const { store, text } = parseToolArguments("memory_write", writeArguments, args);
    const { id } = memoryOf("memory_write", context).write(store, text);
    return Promise.resolve({ isError: false, content: `remembered in ${store} (memory #${id})` });
  },
};

function formatDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

function formatHit(h: MemoryHit): string {
  return `[#${h.id} ${h.store}, ${formatDate(h.createdAt)}, by ${h.author}] ${h.text}`;
}

/** The `memory_search` tool. */
export const memorySearchTool: Tool = {
  name: "memory_search",
  description: "Search remembered facts by keywords. Searches every memory store this " +
    "conversation may read; returns the best matches with their store, date and author.",
  parameters: z.toJSONSchema(searchArguments) as Record<string, unknown>,
  readOnly: true,
  run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const { query, limit } = parseToolArguments("memory_search", searchArguments, args);
    const { searched, hits } = memoryOf("memory_search", context).search(query, limit ?? 8);
    const where = searched.join(", ");
    if (hits.length === 0) {
      return Promise.resolve({ isError: false, content: `no memories match (searched: ${where})` });
    }
    const lines = hits.map(formatHit);
    const content = `${hits.length} match(es) (searched: ${where})\n${lines.join("\n")}`;
    return Promise.resolve({
      isError: false,
      content: truncateHeadTail(content, context.maxOutputChars),
    });
  },
};

/** The `memory_get` tool. */
export const memoryGetTool: Tool = {
  name: "memory_get",
  description: "Read one remembered fact by its number (the #id a search showed).",
  parameters: z.toJSONSchema(idArguments) as Record<string, unknown>,
  readOnly: true,
  run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const { id } = parseToolArguments("memory_get", idArguments, args);
    const hit = memoryOf("memory_get", context).get(id);
    return Promise.resolve({
      isError: false,
      content: truncateHeadTail(formatHit(hit), context.maxOutputChars),
    });
  },
};

/** The `memory_forget` tool. */
export const memoryForgetTool: Tool = {
  name: "memory_forget",
  description: "Forget a fact this person remembered earlier, by its number (the #id a search " +
    "showed). Only the person who wrote a memory may forget it.",
  parameters: z.toJSONSchema(idArguments) as Record<string, unknown>,
  readOnly: false,
  run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const { id } = parseToolArguments("memory_forget", idArguments, args);
    memoryOf("memory_forget", context).forget(id);
    return Promise.resolve({ isError: false, content: `forgot memory #${id}` });
  },
};
