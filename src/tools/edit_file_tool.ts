/**
 * The `edit_file` tool: replaces an exact string in a file inside the caller's scope.
 * @module
 */
import { z } from "zod";
import { MAX_READ_BYTES } from "./read_file_tool.ts";
import { readScopedFile, writeScopedFile } from "./scoped_file_io.ts";
import { parseToolArguments, type Tool, type ToolContext, ToolError } from "./tool_contract.ts";
import type { ToolResult } from "./tool_contract.ts";

const editArguments = z.strictObject({
  path: z.string().min(1, "must be a non-empty path"),
  old_string: z.string().min(1, "must be the non-empty text to replace"),
  new_string: z.string(),
  replace_all: z.boolean().optional(),
});

function countOccurrences(text: string, needle: string): number {
  let count = 0;
  for (let i = text.indexOf(needle); i !== -1; i = text.indexOf(needle, i + needle.length)) {
    count += 1;
  }
  return count;
}

/** The `edit_file` tool. */
export const editFileTool: Tool = {
  name: "edit_file",
  description:
    "Replace old_string with new_string in a file. old_string must occur exactly once unless " +
    "replace_all is true.",
  parameters: z.toJSONSchema(editArguments) as Record<string, unknown>,
  readOnly: false,
  async run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const parsed = parseToolArguments("edit_file", editArguments, args);
    const text = new TextDecoder().decode(
      await readScopedFile(parsed.path, context.scope, MAX_READ_BYTES),
    );
    const count = countOccurrences(text, parsed.old_string);
    if (count === 0) {
      throw new ToolError("tool.edit_no_match", `old_string was not found in "${parsed.path}"`);
    }
    if (count > 1 && !parsed.replace_all) {
      throw new ToolError(
        "tool.edit_ambiguous",
        `old_string occurs ${count} times in "${parsed.path}"; add context or set replace_all`,
      );
    }
    const updated = parsed.replace_all
      ? text.split(parsed.old_string).join(parsed.new_string)
      : text.replace(parsed.old_string, () => parsed.new_string);
    await writeScopedFile(parsed.path, context.scope, updated);
    return {
      isError: false,
      content: `replaced ${parsed.replace_all ? count : 1} occurrence(s) in ${parsed.path}`,
    };
  },
};
