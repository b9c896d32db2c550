/**
 * Which directory of the workspace a principal sees.
 * @module
 */
import { join } from "node:path";
import type { PathScope } from "../core/tool_contract.ts";
import { SANDBOX_WORKSPACE_MOUNT } from "../core/workspace_path.ts";

/** The directory shared by every non-owner when `workspace_scope = "shared"`. */
export const SHARED_SCOPE_NAME = "shared";

/** The part of config that decides scopes. */
export interface ScopeConfig {
  /** `[agent]` with an absolute workspace. */
  agent: { workspace: string };
  /** `[sandbox]` scope mode. */
  sandbox: { workspaceScope: "user" | "shared" };
}

/**
 * Returns the host directory a non-owner's sandbox and file tools see.
 * `user` null means the shared directory.
 */
export function userScopeDirectory(config: ScopeConfig, user: string | null): string {
  if (config.sandbox.workspaceScope === "shared" || user === null) {
    return join(config.agent.workspace, SHARED_SCOPE_NAME);
  }
  return join(config.agent.workspace, user);
}

/** Returns the scope of a principal: the owner sees the whole workspace on the host. */
export function scopeFor(config: ScopeConfig, user: string, isOwner: boolean): PathScope {
  if (isOwner) return { hostRoot: config.agent.workspace, visibleRoot: config.agent.workspace };
  return { hostRoot: userScopeDirectory(config, user), visibleRoot: SANDBOX_WORKSPACE_MOUNT };
}
