/**
 * The built-in tools by name.
 * @module
 */
import { bashTool } from "./bash_tool.ts";
import { editFileTool } from "./edit_file_tool.ts";
import { execTool } from "./exec_tool.ts";
import {
  memoryForgetTool,
  memoryGetTool,
  memorySearchTool,
  memoryWriteTool,
} from "./memory_tools.ts";
import { readFileTool } from "./read_file_tool.ts";
import { sendFileTool } from "./send_file_tool.ts";
import type { Tool } from "./tool_contract.ts";
import type { ToolName } from "../trust/tool_names.ts";
import { writeFileTool } from "./write_file_tool.ts";

/** The built-in tools, keyed by name. */
export const BUILTIN_TOOLS: Readonly<Record<ToolName, Tool>> = {
  bash: bashTool,
  exec: execTool,
  read_file: readFileTool,
  write_file: writeFileTool,
  edit_file: editFileTool,
  send_file: sendFileTool,
  memory_search: memorySearchTool,
  memory_write: memoryWriteTool,
  memory_get: memoryGetTool,
  memory_forget: memoryForgetTool,
};
