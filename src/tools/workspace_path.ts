/**
 * Resolves a path a tool was given against the scope root, refusing `..` and symlink escapes.
 * @module
 */
import { join, relative } from "node:path";
import { WORKSPACE_MOUNT } from "../sandbox/environment.ts";
import { isInside } from "../sandbox/path_containment.ts";
import { type PathScope, ToolError } from "./tool_contract.ts";

/** Where the sandbox mounts the workspace; sandboxed principals name their files under it. */
export const SANDBOX_WORKSPACE_MOUNT = WORKSPACE_MOUNT;

function outside(requested: string, scope: PathScope): ToolError {
  return new ToolError(
    "tool.path_outside_scope",
    `path "${requested}" is outside your workspace (${scope.visibleRoot})`,
  );
}

/** Splits `requested` into components below the scope root, or throws a `ToolError`. */
export function scopedComponents(requested: string, scope: PathScope): string[] {
  if (typeof requested !== "string" || requested.length === 0) {
    throw new ToolError("tool.invalid_path", "path must be a non-empty string");
  }
  if (requested.includes("\0")) throw new ToolError("tool.invalid_path", "path contains NUL");
  // Refuse `..` outright instead of normalising it: a symlinked directory makes `a/..` ambiguous.
  if (requested.split("/").includes("..")) {
    throw new ToolError("tool.invalid_path", `path "${requested}" must not contain ".."`);
  }
  let below = requested;
  if (requested.startsWith("/")) {
    const root = [scope.visibleRoot, scope.hostRoot].find((r) => isInside(requested, r));
    if (root === undefined) throw outside(requested, scope);
    below = relative(root, requested); // with no `..` left, only `.` and `//` are normalised
  }
  return below.split("/").filter((p) => p !== "" && p !== ".");
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}

/**
 * Returns the host path for `requested`, after checking that the longest existing prefix,
 * with every symlink followed, is still inside the scope root.
 *
 * @example
 * ```ts
 * await resolveScopedPath("notes/a.md", { hostRoot: "/srv/ws/bob", visibleRoot: "/work" });
 * // "/srv/ws/bob/notes/a.md"
 * ```
 */
export async function resolveScopedPath(requested: string, scope: PathScope): Promise<string> {
  const parts = scopedComponents(requested, scope);
  const realRoot = await Deno.realPath(scope.hostRoot);
  let existing = parts.length;
  while (existing > 0 && !(await exists(join(realRoot, ...parts.slice(0, existing))))) {
    existing -= 1;
  }
  let realPrefix: string;
  try {
    realPrefix = await Deno.realPath(join(realRoot, ...parts.slice(0, existing)));
  } catch {
    // A dangling symlink: writing through it would create its target, wherever that is.
    throw new ToolError(
      "tool.invalid_path",
      `path "${requested}" goes through a symlink that points nowhere`,
    );
  }
  if (!isInside(realPrefix, realRoot)) throw outside(requested, scope);
  return join(realPrefix, ...parts.slice(existing));
}
