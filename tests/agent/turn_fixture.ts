/**
 * The turn most provider tests run: one user message, no history, no tools unless given.
 * @module
 */
import type { AgentTool, TurnOptions } from "../../src/agent/agent_loop.ts";
import type { Provider } from "../../src/agent/provider.ts";

/** A turn for `provider` (at most 5 model calls, no tools, none may run); `extra` overrides. */
export function turnOptions(provider: Provider, extra: Partial<TurnOptions> = {}): TurnOptions {
  return {
    provider,
    model: "m",
    system: "sys",
    history: [],
    userText: "go",
    tools: [],
    executeTool: () => Promise.reject(new Error("no tool may run in this test")),
    maxIterations: 5,
    ...extra,
  };
}

/** A tool offered to the model, running in the sandbox. */
export function sandboxedTool(name: string): AgentTool {
  return { name, description: `the ${name} tool`, parameters: { type: "object" }, sandboxed: true };
}
