/**
 * What a person's name may be — configured (`[[users]] name`) or paired (`coop pairing approve
 * --name`): it names their directory under the workspace and their sessions.
 * @module
 */
import { PUBLIC_NAME, TERMINAL_OWNER_NAME } from "../trust/trust_level.ts";

/** 1-32 characters of a-z, 0-9, _ or -, starting with a letter. */
export const USER_NAME_PATTERN = /^[a-z][a-z0-9_-]{0,31}$/;

/** What `USER_NAME_PATTERN` asks for, for error messages. */
export const USER_NAME_RULE =
  "must be 1-32 characters of a-z, 0-9, _ or -, starting with a letter (it names a directory)";

/** Names of the router's default principals; a user by that name would share their sessions. */
export const RESERVED_USER_NAMES: readonly string[] = [PUBLIC_NAME, TERMINAL_OWNER_NAME];

/** Workspace directories of group chats start with this (`<workspace>/group-<name>`). */
export const GROUP_DIRECTORY_PREFIX = "group-";

/**
 * Why `name` cannot name a person (the pattern, a default principal's name, a group's
 * directory prefix), or null when it can.
 */
export function userNameProblem(name: string): string | null {
  if (!USER_NAME_PATTERN.test(name)) return `"${name}" ${USER_NAME_RULE}`;
  if (RESERVED_USER_NAMES.includes(name)) {
    return `"${name}" names Coop's default principal for unknown senders; choose another name`;
  }
  if (name.startsWith(GROUP_DIRECTORY_PREFIX)) {
    return `"${name}" starts with "${GROUP_DIRECTORY_PREFIX}", which names group chats' ` +
      "workspace directories; choose another name";
  }
  return null;
}
