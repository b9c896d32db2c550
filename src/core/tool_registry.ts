/**
 * The built-in tools by name.
 * @module
 */
import { bashTool } from "./bash_tool.ts";
import { editFileTool } from "./edit_file_tool.ts";
import { memorySearchTool, memoryWriteTool } from "./memory_tools.ts";
import { readFileTool } from "./read_file_tool.ts";
import type { Tool } from "./tool_contract.ts";
import { writeFileTool } from "./write_file_tool.ts";

/** Names of the built-in tools. */
export const TOOL_NAMES = [
  "bash",
  "read_file",
  "write_file",
  "edit_file",
  "memory_search",
  "memory_write",
] as const;

/** The name of a built-in tool. */
export type ToolName = (typeof TOOL_NAMES)[number];

/** The built-in tools, keyed by name. */
export const BUILTIN_TOOLS: Readonly<Record<ToolName, Tool>> = {
  bash: bashTool,
  read_file: readFileTool,
  write_file: writeFileTool,
  edit_file: editFileTool,
  memory_search: memorySearchTool,
  memory_write: memoryWriteTool,
};

/** Tools that run in the gateway itself (no workspace, no sandbox). */
export const GATEWAY_TOOL_NAMES: readonly ToolName[] = ["memory_search", "memory_write"];

/** Returns true when `name` is a built-in tool. */
export function isToolName(name: unknown): name is ToolName {
  return typeof name === "string" && (TOOL_NAMES as readonly string[]).includes(name);
}
