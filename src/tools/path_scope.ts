/**
 * `scopeFor`: the directory a principal's tools see, on the host and by the name they use.
 * @module
 */
import { join } from "node:path";
import type { PathScope } from "./tool_contract.ts";
import { SANDBOX_WORKSPACE_MOUNT } from "./workspace_path.ts";
import { type ScopeConfig, userScopeDirectory } from "../config/user_directories.ts";

/**
 * Returns the scope of a principal: the owner sees the whole workspace on the host; in a group
 * turn everyone sees the group's directory (`groupDir`, under the workspace) in the sandbox.
 */
export function scopeFor(
  config: ScopeConfig,
  user: string,
  isOwner: boolean,
  groupDir?: string,
): PathScope {
  if (groupDir !== undefined) {
    return {
      hostRoot: join(config.agent.workspace, groupDir),
      visibleRoot: SANDBOX_WORKSPACE_MOUNT,
    };
  }
  if (isOwner) return { hostRoot: config.agent.workspace, visibleRoot: config.agent.workspace };
  return { hostRoot: userScopeDirectory(config, user), visibleRoot: SANDBOX_WORKSPACE_MOUNT };
}
