/**
 * The `write_file` tool: creates or replaces a file inside the caller's scope.
 * @module
 */
import { dirname } from "node:path";
import { z } from "zod";
import { fileSystemError } from "./read_file_tool.ts";
import { parseToolArguments, type Tool, type ToolContext } from "./tool_contract.ts";
import type { ToolResult } from "./tool_contract.ts";
import { resolveScopedPath } from "./workspace_path.ts";

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
    const hostPath = await resolveScopedPath(path, context.scope);
    try {
      // The missing part of the path did not exist when it was checked, so it holds no symlink.
      await Deno.mkdir(dirname(hostPath), { recursive: true });
      await Deno.writeTextFile(hostPath, content);
    } catch (error) {
      throw fileSystemError(path, error);
    }
    const bytes = new TextEncoder().encode(content).length;
    return { isError: false, content: `wrote ${bytes} bytes to ${path}` };
  },
};
