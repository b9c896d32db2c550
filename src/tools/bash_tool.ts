/**
 * The `bash` tool: runs one shell command where the caller's trust says it must run.
 * @module
 */
import { z } from "zod";
import {
  type CommandResult,
  parseToolArguments,
  type Tool,
  type ToolContext,
  ToolError,
  type ToolResult,
} from "./tool_contract.ts";
import { truncateHeadTail } from "./truncation.ts";
import { resolveWorkingDir } from "./working_dir.ts";

const bashArguments = z.strictObject({
  command: z.string().min(1, "must be a non-empty shell command"),
  timeout: z.number().positive("must be a positive number of seconds").optional(),
  working_dir: z.string().min(1, "must be a directory in your workspace").optional(),
});

/** The timeout of one command in milliseconds: the model's, within the configured maximum. */
export function commandTimeoutMs(
  tool: string,
  timeoutSeconds: number | undefined,
  context: ToolContext,
): number {
  const timeoutMs = timeoutSeconds === undefined ? context.defaultTimeoutMs : timeoutSeconds * 1000;
  if (timeoutMs > context.maxTimeoutMs) {
    throw new ToolError(
      "tool.invalid_arguments",
      `${tool}: invalid arguments: "timeout" must be at most ${
        context.maxTimeoutMs / 1000
      } seconds`,
    );
  }
  return timeoutMs;
}

/** The text the model reads for a finished command, and whether it failed. */
export function commandToolResult(
  result: CommandResult,
  timeoutMs: number,
  context: ToolContext,
): ToolResult {
  const text = formatCommandResult(result, timeoutMs);
  return {
    isError: result.exitCode !== 0 || result.timedOut,
    content: truncateHeadTail(text, context.maxOutputChars),
    exitCode: result.exitCode,
  };
}

/** Formats a command's outcome as the text the model reads. */
export function formatCommandResult(result: CommandResult, timeoutMs: number): string {
  const sections: string[] = [];
  if (result.stdout) sections.push(result.stdout.replace(/\n$/, ""));
  if (result.stderr) sections.push(`[stderr]\n${result.stderr.replace(/\n$/, "")}`);
  if (result.timedOut) sections.push(`[timed out after ${timeoutMs / 1000} s]`);
  else if (result.signal) sections.push(`[killed by ${result.signal}]`);
  // curl and most clients drop the body of a refused CONNECT: say it here, once per target.
  const seen = new Set<string>();
  for (const d of result.proxyDenials ?? []) {
    const target = `${d.host}:${d.port}`;
    if (seen.has(target)) continue;
    seen.add(target);
    sections.push(
      `[blocked by sandbox policy: ${target} ${d.reason}; do not retry via --noproxy, another ` +
        "resolver or a raw IP: there is no other route out]",
    );
  }
  if (result.proxyRefusedConnections) {
    sections.push(
      `[blocked by sandbox policy: the proxy refused ${result.proxyRefusedConnections} ` +
        "connection(s) because too many were open at once; close connections you no longer " +
        "need or open fewer in parallel]",
    );
  }
  sections.push(`[exit code ${result.exitCode}]`);
  if (result.truncated) sections.push("[output capture limit reached; the rest was dropped]");
  return sections.join("\n");
}

/** The `bash` tool. */
export const bashTool: Tool = {
  name: "bash",
  description: "Run a shell command (sh -c) in your workspace and return its output and exit " +
    "code. Optional working_dir: a directory in your workspace to run it in. Programs in " +
    "/work/tools, /work/bin and /work/.local/bin of the workspace are found by name.",
  parameters: z.toJSONSchema(bashArguments) as Record<string, unknown>,
  readOnly: false,
  async run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const parsed = parseToolArguments("bash", bashArguments, args);
    if (!context.runCommand) {
      throw new ToolError("tool.unavailable", "bash is not available to you");
    }
    const timeoutMs = commandTimeoutMs("bash", parsed.timeout, context);
    // Checked before anything runs: a directory outside the workspace is an error, not a cd.
    const workingDir = parsed.working_dir === undefined
      ? undefined
      : await resolveWorkingDir(parsed.working_dir, context.scope, "bash");
    const result = await context.runCommand(parsed.command, {
      timeoutMs,
      signal: context.signal,
      ...(workingDir === undefined ? {} : { workingDir }),
    });
    return commandToolResult(result, timeoutMs, context);
  },
};
