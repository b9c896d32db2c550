/**
 * The `write_file` tool: creates or replaces a file inside the caller's scope.
 * @module
 */
import { z } from "zod";
import { parseToolArguments, type Tool, type ToolContext } from "./tool_contract.ts";
import type { ToolResult } from "./tool_contract.ts";
import { writeScopedFile } from "./scoped_file_io.ts";

const writeArguments = z.strictObject({
  path: z.string().min(1, "must be a non-empty path"),
  content: z.string(),
});

/** The `write_file` tool. */
export const writeFileTool: Tool = {
  name: "write_file",
  description: "Create or overwrite a text file in your workspace; missing directories are made.",
  parameters: z.toJSONSchema(writeArguments) as Record<string, unknown>,
  readOnly: false,
  async run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const { path, content } = parseToolArguments("write_file", writeArguments, args);
    const bytes = await writeScopedFile(path, context.scope, content);
    return { isError: false, content: `wrote ${bytes} bytes to ${path}` };
  },
};
