/**
 * The built-in tools' names: what `authorize()` decides about, before any tool exists.
 * @module
 */

/** Names of the built-in tools. */
export const TOOL_NAMES = [
  "bash",
  "exec",
  "read_file",
  "write_file",
  "edit_file",
  "send_file",
  "memory_search",
  "memory_write",
  "memory_get",
  "memory_forget",
] as const;

/** The name of a built-in tool. */
export type ToolName = (typeof TOOL_NAMES)[number];

/** The memory tools: each store and entry they touch is authorized again per call. */
export const MEMORY_TOOLS: readonly ToolName[] = [
  "memory_search",
  "memory_write",
  "memory_get",
  "memory_forget",
];

/** Tools that run in the gateway itself (no workspace, no sandbox). */
export const GATEWAY_TOOL_NAMES: readonly ToolName[] = MEMORY_TOOLS;

/** Tools that run a program in the caller's place (host for the owner, else the sandbox). */
export const COMMAND_TOOL_NAMES: readonly ToolName[] = ["bash", "exec"];

/** Returns true when `name` is a built-in tool. */
export function isToolName(name: unknown): name is ToolName {
  return typeof name === "string" && (TOOL_NAMES as readonly string[]).includes(name);
}
