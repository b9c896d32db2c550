/**
 * The tool step of a turn: runs the calls of one model response in order through the caller's
 * executor and collects one result per call — also for calls that were cancelled, capped, never
 * offered or whose arguments could not be used, so the history stays valid.
 * @module
 */
import { errorMessage } from "../errors/coop_error.ts";
import type {
  AgentEvent,
  AgentTool,
  AgentToolSummary,
  ExecuteTool,
  ToolExecution,
} from "./agent_loop.ts";
import type { ToolCallRequest, ToolResultContent } from "./provider.ts";

const CANCELLED_RESULT = "cancelled: the user stopped this turn before the tool finished";
const NOT_RUN_RESULT = "not run: the turn reached its iteration limit";

/** How long a cancelled tool may take to report how it ended (e.g. killed, exit 137). */
const CANCEL_GRACE_MS = 2000;

/** A one-line description of a tool call for channels (`ls -la`, a path, or the arguments). */
export function summarizeToolCall(args: unknown): string {
  const record = (args ?? {}) as Record<string, unknown>;
  const text = typeof record.command === "string"
    ? record.command
    : typeof record.path === "string"
    ? record.path
    : JSON.stringify(args) ?? "";
  return text.length > 200 ? text.slice(0, 199) + "…" : text;
}

/** Rejects a while after `signal` aborts: a tool that ignores the signal is abandoned. */
function abandonAfterAbort(signal: AbortSignal): { promise: Promise<never>; dispose(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onAbort = () => {};
  const promise = new Promise<never>((_, reject) => {
    onAbort = () => timer = setTimeout(() => reject(signal.reason), CANCEL_GRACE_MS);
    if (signal.aborted) onAbort();
    else signal.addEventListener("abort", onAbort, { once: true });
  });
  return {
    promise,
    dispose() {
      clearTimeout(timer);
      signal.removeEventListener("abort", onAbort);
    },
  };
}

/** What the tool step needs from the turn. */
export interface ToolStep {
  /** The tools offered to the model, by name. */
  offered: ReadonlyMap<string, AgentTool>;
  /** Runs an offered call. */
  executeTool: ExecuteTool;
  /** The turn's cancellation. */
  signal: AbortSignal;
  /** Receives `tool_start` and `tool_end`. */
  onEvent?: (event: AgentEvent) => void;
  /** True on the last allowed model call: the calls are answered without running. */
  lastIteration: boolean;
  /** Receives one summary per call that was looked at (not for cancelled or capped ones). */
  summaries: AgentToolSummary[];
}

/** Runs one offered call through the executor, turning a throw or a cancel into a result. */
async function execute(
  call: ToolCallRequest,
  tool: AgentTool,
  step: ToolStep,
): Promise<ToolExecution> {
  const { signal } = step;
  const abandon = abandonAfterAbort(signal);
  try {
    return await Promise.race([
      step.executeTool(call.name, call.arguments, signal),
      abandon.promise,
    ]);
  } catch (error) {
    return signal.aborted
      ? { content: CANCELLED_RESULT, isError: true, sandboxed: tool.sandboxed }
      : {
        content: `${call.name} failed: ${errorMessage(error)}`,
        isError: true,
        sandboxed: tool.sandboxed,
      };
  } finally {
    abandon.dispose();
  }
}

/** Runs `calls` one at a time, in the model's order; returns one result per call. */
export async function runToolCalls(
  calls: readonly ToolCallRequest[],
  step: ToolStep,
): Promise<ToolResultContent[]> {
  const { signal, onEvent } = step;
  const results: ToolResultContent[] = [];
  for (const call of calls) {
    const result = (content: string, isError: boolean) =>
      results.push({ toolCallId: call.id, name: call.name, content, isError });
    if (signal.aborted) {
      result(CANCELLED_RESULT, true);
      continue;
    }
    if (step.lastIteration) {
      result(NOT_RUN_RESULT, true);
      continue;
    }
    const tool = step.offered.get(call.name);
    if (!tool) {
      // Never reaches the executor: the model asked for something it was not offered.
      result(`tool "${call.name}" is not available in this conversation`, true);
      step.summaries.push({ name: call.name, sandboxed: false, exitCode: null });
      continue;
    }
    if (call.argumentsError !== undefined) {
      // Never reaches the executor either: the model reads why and can send the call again.
      result(call.argumentsError, true);
      step.summaries.push({ name: call.name, sandboxed: false, exitCode: null });
      continue;
    }
    onEvent?.({
      type: "tool_start",
      name: call.name,
      sandboxed: tool.sandboxed,
      summary: summarizeToolCall(call.arguments),
    });
    const execution = await execute(call, tool, step);
    const exitCode = execution.exitCode ?? null;
    step.summaries.push({ name: call.name, sandboxed: execution.sandboxed, exitCode });
    onEvent?.({
      type: "tool_end",
      name: call.name,
      sandboxed: execution.sandboxed,
      exitCode,
      isError: execution.isError,
    });
    result(execution.content, execution.isError);
  }
  return results;
}
