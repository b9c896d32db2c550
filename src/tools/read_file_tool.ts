/**
 * The `read_file` tool: reads a text file inside the caller's scope.
 * @module
 */
import { z } from "zod";
import { parseToolArguments, type Tool, type ToolContext, ToolError } from "./tool_contract.ts";
import type { ToolResult } from "./tool_contract.ts";
import { truncateHeadTail } from "./truncation.ts";
import { readScopedFile } from "./scoped_file_io.ts";

/** Files larger than this are refused rather than read into memory. */
export const MAX_READ_BYTES = 10 * 1024 * 1024;

const readArguments = z.strictObject({
  path: z.string().min(1, "must be a non-empty path"),
  offset: z.number().int().min(1, "must be a line number ≥ 1").optional(),
  limit: z.number().int().min(1, "must be ≥ 1").optional(),
});

/** The `read_file` tool. */
export const readFileTool: Tool = {
  name: "read_file",
  description: "Read a text file from your workspace. Optional 1-based line offset and line limit.",
  parameters: z.toJSONSchema(readArguments) as Record<string, unknown>,
  readOnly: true,
  async run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const { path, offset, limit } = parseToolArguments("read_file", readArguments, args);
    const bytes = await readScopedFile(path, context.scope, MAX_READ_BYTES);
    if (bytes.subarray(0, 8192).includes(0)) {
      throw new ToolError("tool.binary_file", `"${path}" looks like a binary file`);
    }
    let text = new TextDecoder().decode(bytes);
    if (offset !== undefined || limit !== undefined) {
      const lines = text.split("\n");
      const start = (offset ?? 1) - 1;
      text = lines.slice(start, limit === undefined ? undefined : start + limit).join("\n");
    }
    return { isError: false, content: truncateHeadTail(text, context.maxOutputChars) };
  },
};
