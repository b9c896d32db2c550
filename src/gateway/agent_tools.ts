/**
 * Connects the agent loop to the gateway: which tools a turn offers (decided by `authorize()`)
 * and how a tool call runs (through the `SandboxExecutor`, which authorizes again).
 * @module
 */
import type { AgentTool, ExecuteTool } from "../agent/agent_loop.ts";
import { BUILTIN_TOOLS, TOOL_NAMES } from "../core/tool_registry.ts";
import { authorize, type Principal, type Situation } from "./authorization.ts";
import type { SandboxExecutor, ToolCall } from "./sandbox_executor.ts";

function withoutSchemaKeyword(schema: Record<string, unknown>): Record<string, unknown> {
  // zod adds "$schema"; providers want a bare object schema.
  const { $schema: _, ...rest } = schema;
  return rest;
}

/**
 * Returns the tools `principal` may use in `situation`: none for `public`, no `bash` for
 * `familiar`; each with whether it runs in the sandbox.
 */
export function allowedTools(principal: Principal, situation: Situation): AgentTool[] {
  const tools: AgentTool[] = [];
  for (const name of TOOL_NAMES) {
    const decision = authorize(principal, situation, { kind: "tool", tool: name });
    if (!decision.allowed) continue;
    const tool = BUILTIN_TOOLS[name];
    tools.push({
      name,
      description: tool.description,
      parameters: withoutSchemaKeyword(tool.parameters),
      sandboxed: decision.placement === "sandbox",
    });
  }
  return tools;
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
