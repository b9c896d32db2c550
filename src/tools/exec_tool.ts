/**
 * The `exec` tool: runs one program with its arguments — no shell, so nothing in them is
 * expanded — with the same trust, sandbox and limits as `bash`.
 * @module
 */
import { z } from "zod";
import { commandTimeoutMs, commandToolResult } from "./bash_tool.ts";
import { dangerousEnvProblem } from "./dangerous_env.ts";
import {
  parseToolArguments,
  type Tool,
  type ToolContext,
  ToolError,
  type ToolResult,
} from "./tool_contract.ts";
import { resolveWorkingDir } from "./working_dir.ts";

const execArguments = z.strictObject({
  argv: z.array(z.string()).min(1, "must name the program, then its arguments"),
  env: z.record(z.string(), z.string()).optional(),
  working_dir: z.string().min(1, "must be a directory in your workspace").optional(),
  timeout: z.number().positive("must be a positive number of seconds").optional(),
});

/** Refuses what cannot be passed to a program: empty program names, NUL bytes. */
function checkArgv(argv: readonly string[]): void {
  if (argv[0] === "") {
    throw new ToolError("tool.invalid_arguments", 'exec: invalid arguments: "argv.0" is empty');
  }
  const nul = argv.findIndex((arg) => arg.includes("\0"));
  if (nul >= 0) {
    throw new ToolError(
      "tool.invalid_arguments",
      `exec: invalid arguments: "argv.${nul}" contains a NUL byte`,
    );
  }
}

/** Refuses variables that make programs load or run other code (see `dangerous_env.ts`). */
function checkEnv(env: Record<string, string>): void {
  for (const [name, value] of Object.entries(env)) {
    const problem = dangerousEnvProblem(name);
    if (problem !== null) {
      throw new ToolError(
        "tool.env_refused",
        `exec: env "${name}" is refused: ${problem}. Nothing ran; leave it out`,
      );
    }
    if (value.includes("\0")) {
      throw new ToolError("tool.invalid_arguments", `exec: env "${name}" contains a NUL byte`);
    }
  }
}

/** The `exec` tool. */
export const execTool: Tool = {
  name: "exec",
  description: "Run a program with arguments (argv, no shell: nothing is expanded or " +
    "interpreted) in your workspace and return its output and exit code. Optional env " +
    "(variables such as LD_PRELOAD that load code are refused), working_dir (a directory in " +
    "your workspace) and timeout in seconds. Programs in /work/tools, /work/bin and " +
    "/work/.local/bin of the workspace are found by name.",
  parameters: z.toJSONSchema(execArguments) as Record<string, unknown>,
  readOnly: false,
  async run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const parsed = parseToolArguments("exec", execArguments, args);
    if (!context.runArgv) throw new ToolError("tool.unavailable", "exec is not available to you");
    checkArgv(parsed.argv);
    checkEnv(parsed.env ?? {});
    const timeoutMs = commandTimeoutMs("exec", parsed.timeout, context);
    const workingDir = parsed.working_dir === undefined
      ? undefined
      : await resolveWorkingDir(parsed.working_dir, context.scope, "exec");
    const result = await context.runArgv(parsed.argv, {
      timeoutMs,
      signal: context.signal,
      ...(workingDir === undefined ? {} : { workingDir }),
      ...(parsed.env === undefined ? {} : { env: parsed.env }),
    });
    return commandToolResult(result, timeoutMs, context);
  },
};
