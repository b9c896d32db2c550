/**
 * The `send_file` tool: sends a file from the caller's own workspace to their chat, after the
 * reply. Trust-gated like `read_file`; the file is read beneath the workspace root by the
 * kernel (`openat2(RESOLVE_BENEATH)`), so neither `..` nor a symlink leads outside it.
 * @module
 */
import { basename } from "node:path";
import { z } from "zod";
import { DEFAULT_MAX_SEND_FILE_BYTES } from "../config/config_units.ts";
import { mediaTypeOf } from "./media_type.ts";
import { readScopedFile } from "./scoped_file_io.ts";
import {
  parseToolArguments,
  type Tool,
  type ToolContext,
  type ToolResult,
} from "./tool_contract.ts";

const sendArguments = z.strictObject({
  path: z.string().min(1, "must be a file in your workspace"),
});

/** The `send_file` tool. */
export const sendFileTool: Tool = {
  name: "send_file",
  description: "Send a file from your workspace to the person you are talking with (as a " +
    "document or attachment, after your reply). The path is relative to your workspace.",
  parameters: z.toJSONSchema(sendArguments) as Record<string, unknown>,
  readOnly: true,
  async run(args: unknown, context: ToolContext): Promise<ToolResult> {
    const { path } = parseToolArguments("send_file", sendArguments, args);
    const cap = context.maxSendFileBytes ?? DEFAULT_MAX_SEND_FILE_BYTES;
    const bytes = await readScopedFile(path, context.scope, cap, "send_file");
    const name = basename(path);
    const mediaType = mediaTypeOf(name);
    return {
      isError: false,
      content: `"${name}" (${bytes.length} bytes, ${mediaType}) will be sent to the ` +
        "chat after your reply",
      file: { name, mediaType, bytes },
    };
  },
};
