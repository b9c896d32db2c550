/**
 * Connects the agent loop to the gateway: which tools a turn offers (decided by `authorize()`)
 * and how a tool call runs (through the `ToolExecutor`, which authorizes again, in the
 * turn's situation as its reads have left it).
 * @module
 */
import type { AgentTool, ExecuteTool } from "../agent/agent_loop.ts";
import { COMMAND_TOOL_NAMES, type ToolName } from "../trust/tool_names.ts";
import { decide, type Principal, type Situation } from "../trust/authorization.ts";
import type { ToolFile } from "../tools/tool_contract.ts";
import type { ToolCall, ToolCallOutcome, ToolExecutor } from "../tools/tool_executor.ts";
import type { LeakGuard, LeakScope } from "./leak_guard.ts";
import type { TurnTaint } from "./turn_taint.ts";

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
  executor: ToolExecutor,
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

/** Files one turn may send (`send_file`); each is capped by `[agent] max_send_file_size`. */
export const MAX_FILES_PER_TURN = 10;

/** One turn as its tool calls need it: the taint carries the principal and the situation. */
export interface TurnBinding
  extends Omit<ToolCall, "tool" | "args" | "signal" | "principal" | "situation"> {
  /** The turn's trust as it goes; every call is authorized in its current situation. */
  taint: TurnTaint;
  /** Receives the files the turn's calls send to the chat (`send_file`), in order. */
  files?: ToolFile[];
  /** Scans each call's arguments and result (none: nothing is scanned). */
  leaks?: LeakGuard;
}

/**
 * Adapts the executor to `runTurn`'s `executeTool` for one turn. Each call is authorized in the
 * turn's situation at that moment, and the memories it read join the turn's contributors
 * before the next call (ATTACKS P14); the model is told when and why that lowered the turn.
 */
export function executorTool(executor: ToolExecutor, turn: TurnBinding): ExecuteTool {
  const { taint, files, leaks, ...rest } = turn;
  const scope = (where: LeakScope["where"], tool: string): LeakScope => ({
    where,
    tool,
    principal: taint.principal.name,
    trust: taint.trust,
    channel: taint.situation.channel,
  });
  const redact = (text: string, tool: string) =>
    leaks ? leaks.redact(text, scope("tool_result", tool)) : text;
  return async (name, args, signal) => {
    const into = name === "memory_write" ? "memory_write" : "tool_arguments";
    const outcome = await executor.call({
      ...rest,
      principal: taint.principal,
      situation: taint.situation,
      tool: name,
      args: leaks ? leaks.redactArguments(args, scope(into, name)) : args,
      signal,
    });
    if (outcome.file && !outcome.isError && files) {
      // A turn holds what it sends in memory until the reply goes out: bound how much.
      if (files.length >= MAX_FILES_PER_TURN) {
        return {
          content: `send_file: this turn already sends ${MAX_FILES_PER_TURN} files, the most ` +
            "one reply carries; nothing more was added",
          isError: true,
          sandboxed: false,
          exitCode: null,
        };
      }
      // What a file carries out is scanned like a reply (ATTACKS: secrets never reach a chat).
      const bytes = leaks
        ? leaks.redactFile(outcome.file.bytes, scope("sent_file", name))
        : outcome.file.bytes;
      files.push({ ...outcome.file, bytes });
    }
    const lowered = outcome.memoryRead ? taint.read(outcome.memoryRead) : [];
    const loweredByFile = outcome.readFrom
      ? taint.readFile(String((args as { path?: unknown }).path), outcome.readFrom)
      : false;
    // A command ran when it has an exit code: without one its sandbox never started (or the
    // call was refused on the way), and "sandboxed" would claim a run that did not happen.
    const ran = outcome.decision?.allowed === true &&
      (!(COMMAND_TOOL_NAMES as readonly string[]).includes(name) || outcome.exitCode !== undefined);
    const note = taintNote(outcome, lowered.length > 0 || loweredByFile, taint);
    return {
      content: redact(note ? `${outcome.content}\n[${note}]` : outcome.content, name),
      isError: outcome.isError,
      sandboxed: ran && outcome.decision?.placement === "sandbox",
      exitCode: outcome.exitCode ?? null,
    };
  };
}

/**
 * Tells the model why the turn's trust is lower than its user's: on the call whose read lowered
 * it, and on every later call that memory taint refused or sent into the sandbox.
 */
function taintNote(outcome: ToolCallOutcome, loweredNow: boolean, taint: TurnTaint): string | null {
  const why = taint.explain();
  if (why === null) return null;
  if (loweredNow) return `${why}; later tool calls in this turn are authorized at that trust`;
  const decision = outcome.decision;
  if (decision && (!decision.allowed || decision.placement === "sandbox")) return why;
  return null;
}
