/**
 * Connects the agent loop to the gateway: which tools a turn offers (decided by `authorize()`)
 * and how a tool call runs (through the `SandboxExecutor`, which authorizes again).
 * @module
 */
import type { AgentTool, ExecuteTool } from "../agent/agent_loop.ts";
import type { ToolName } from "../core/tool_registry.ts";
import { decide, type Principal, type Situation } from "./authorization.ts";
import type { SandboxExecutor, ToolCall } from "./sandbox_executor.ts";

function withoutSchemaKeyword(schema: Record<string, unknown>): Record<string, unknown> {
  // zod adds "$schema"; providers want a bare object schema.
  const { $schema: _, ...rest } = schema;
  return rest;
}

/**
 * Returns the tools the executor offers `principal` in `situation` (none for `public`, no `bash`
 * for `familiar`, memory tools only when memory is configured), each with whether it runs in
 * the sandbox. The executor authorizes every call again; this list only shapes the offer.
 */
export function allowedTools(
  executor: SandboxExecutor,
  principal: Principal,
  situation: Omit<Situation, "sandboxEnabled">,
): AgentTool[] {
  const full: Situation = { ...situation, sandboxEnabled: executor.sandboxEnabled };
  return executor.toolsFor(principal, situation).map((tool) => ({
    name: tool.name,
    description: tool.description,
    parameters: withoutSchemaKeyword(tool.parameters),
    sandboxed: decide(principal, full, { kind: "tool", tool: tool.name as ToolName }).placement ===
      "sandbox",
  }));
}

/** Adapts the executor to `runTurn`'s `executeTool` for one turn's principal and situation. */
export function executorTool(
  executor: SandboxExecutor,
  turn: Omit<ToolCall, "tool" | "args" | "signal">,
): ExecuteTool {
  return async (name, args, signal) => {
    const outcome = await executor.call({ ...turn, tool: name, args, signal });
    const ran = outcome.decision?.allowed === true;
    return {
      content: outcome.content,
      isError: outcome.isError,
      sandboxed: ran && outcome.decision?.placement === "sandbox",
      exitCode: outcome.exitCode ?? null,
    };
  };
}
