/**
 * The workspace directory of a group chat: `<workspace>/group-<name>` for a named `[[groups]]`
 * entry, `<workspace>/group-<channel>-<chat id>` otherwise. Everyone's tools in a group turn —
 * the owner's too — see that directory at `/work` in the sandbox, never their own.
 * @module
 */
import { createHash } from "node:crypto";
import { join } from "node:path";
import { GROUP_DIRECTORY_PREFIX } from "./user_name.ts";

const SAFE = /^[A-Za-z0-9_-]{1,48}$/;

/**
 * Returns `text` when it is a safe directory name as it is; otherwise its safe characters (others
 * become `_`) and 8 hex digits of its SHA-256, so that two chat ids never share a directory
 * (Signal group ids are base64 and may hold `/`, `+` and `=`).
 */
export function directorySafe(text: string): string {
  if (SAFE.test(text)) return text;
  const hash = createHash("sha256").update(text).digest("hex").slice(0, 8);
  return `${text.replace(/[^A-Za-z0-9_-]+/g, "_").slice(0, 40)}-${hash}`;
}

/** Where a group chat is: its channel, its id there, and its `[[groups]]` name if any. */
export interface GroupChat {
  /** E.g. `telegram`. */
  channel: string;
  /** The chat's id after the channel (`-1001234`, `group:<id>`). */
  id: string;
  /** `[[groups]] name` of the entry that matched, if it has one. */
  name?: string;
}

/** The group's directory name under the workspace, e.g. `group-family`. */
export function groupDirectoryName(chat: GroupChat): string {
  return GROUP_DIRECTORY_PREFIX + directorySafe(chat.name ?? `${chat.channel}-${chat.id}`);
}

/** The group's directory on the host. */
export function groupDirectory(config: { agent: { workspace: string } }, chat: GroupChat): string {
  return join(config.agent.workspace, groupDirectoryName(chat));
}
