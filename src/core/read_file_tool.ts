/**
 * The `read_file` tool: reads a text file inside the caller's scope.
 * @module
 */
import { z } from "zod";
import { parseToolArguments, type Tool, type ToolContext, ToolError } from "./tool_contract.ts";
import type { ToolResult } from "./tool_contract.ts";
import { truncateHeadTail } from "./truncation.ts";
import { resolveScopedPath } from "./workspace_path.ts";

/** Files larger than this are refused rather than read into memory. */
export const MAX_READ_BYTES = 10 * 1024 * 1024;

const readArguments = z.strictObject({
  path: z.string().min(1, "must be a non-empty path"),
  offset: z.number().int().min(1, "must be a line number ≥ 1").optional(),
  limit: z.number().int().min(1, "must be ≥ 1").optional(),
});

/** Maps OS errors on a scoped path to messages that name the path the model gave. */
export function fileSystemError(path: string, error: unknown): ToolError {
  if (error instanceof Deno.errors.NotFound) {
    return new ToolError("tool.not_found", `no such file: "${path}"`, { cause: error });
  }
  if (error instanceof Deno.errors.PermissionDenied) {
    return new ToolError("tool.permission_denied", `permission denied: "${path}"`, {
      cause: error,
    });
  }
  if (error instanceof Deno.errors.IsADirectory) {
    return new ToolError("tool.is_directory", `"${path}" is a directory`, { cause: error });
  }
  const message = error instanceof Error ? error.message : String(error);
  return new ToolError("tool.io", `cannot access "${path}": ${message}`, { cause: error });
}

/** The `read_file` tool. */
export const readFileTool: Tool = {
  name: "read_file",
  description: "Read a text file from your workspace. Optional 1-based line offset and line limit.",
  parameters: z.toJSONSchema(readArguments) as Record<string, unknown>,
  readOnly: true,
  async run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const { path, offset, limit } = parseToolArguments("read_file", readArguments, args);
    const hostPath = await resolveScopedPath(path, context.scope);
    let bytes: Uint8Array;
    try {
      const info = await Deno.stat(hostPath);
      if (info.isDirectory) throw new Deno.errors.IsADirectory();
      if (info.size > MAX_READ_BYTES) {
        throw new ToolError(
          "tool.file_too_large",
          `"${path}" is ${info.size} bytes; read_file reads at most ${MAX_READ_BYTES}`,
        );
      }
      bytes = await Deno.readFile(hostPath);
    } catch (error) {
      throw error instanceof ToolError ? error : fileSystemError(path, error);
    }
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
