/**
 * `scopeFor`: the directory a principal's tools see, on the host and by the name they use.
 * @module
 */
import type { PathScope } from "./tool_contract.ts";
import { SANDBOX_WORKSPACE_MOUNT } from "./workspace_path.ts";
import { type ScopeConfig, userScopeDirectory } from "../config/user_directories.ts";

/** Returns the scope of a principal: the owner sees the whole workspace on the host. */
export function scopeFor(config: ScopeConfig, user: string, isOwner: boolean): PathScope {
  if (isOwner) return { hostRoot: config.agent.workspace, visibleRoot: config.agent.workspace };
  return { hostRoot: userScopeDirectory(config, user), visibleRoot: SANDBOX_WORKSPACE_MOUNT };
}
