/**
 * Which directory of the workspace each non-owner's sandbox and file tools see, from config.
 * @module
 */
import { join } from "node:path";

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
