/**
 * Tools that run in the gateway itself: the memory tools. Authorized like any tool, then per
 * store; never sandboxed, and they touch no files.
 * @module
 */
import type { SandboxSettings } from "../config/sandbox_settings.ts";
import type { MemoryDatabase, MemoryHit } from "../state/memory_store.ts";
import type { Situation } from "../trust/authorization.ts";
import type { ToolName } from "../trust/tool_names.ts";
import { gatedMemory } from "./memory_access.ts";
import { runTool, type ToolContext } from "./tool_contract.ts";
import type { ToolCall, ToolCallOutcome } from "./tool_executor.ts";
import { BUILTIN_TOOLS } from "./tool_registry.ts";

/** What a gateway-side call needs besides the call itself. */
export interface GatewayPlacement {
  /** The memory stores (absent: the memory tools are not offered at all). */
  memory: MemoryDatabase | undefined;
  /** The caller's merged sandbox settings (for the timeouts the tool contract carries). */
  settings: SandboxSettings;
  /** Cap on what one tool returns to the model. */
  maxOutputChars: number;
}

/**
 * Runs a memory tool call `authorize()` allowed; the memories it read come back in `memoryRead`
 * (ATTACKS P14), and the memory store applies the per-store rules.
 */
export async function callInGateway(
  call: ToolCall,
  situation: Situation,
  { memory, settings, maxOutputChars }: GatewayPlacement,
): Promise<Omit<ToolCallOutcome, "decision">> {
  const tool = call.tool as ToolName;
  const read: MemoryHit[] = [];
  const context: ToolContext = {
    // Memory tools touch no files; an empty scope keeps the contract without granting any.
    scope: { hostRoot: "/nonexistent", visibleRoot: "/nonexistent" },
    memory: memory &&
      gatedMemory(memory, call.principal, situation, (hits) => read.push(...hits)),
    defaultTimeoutMs: settings.timeoutMs,
    maxTimeoutMs: settings.maxTimeoutMs,
    maxOutputChars,
  };
  const result = await runTool(BUILTIN_TOOLS[tool], call.args, context);
  return read.length ? { ...result, memoryRead: read } : result;
}
