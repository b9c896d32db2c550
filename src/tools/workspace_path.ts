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

async function lstatOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/**
 * How many leading `parts` exist below `root`, and the deepest existing one's `lstat` (`root`'s
 * own when none does).
 */
export async function existingPrefix(
  root: string,
  parts: readonly string[],
): Promise<{ depth: number; info: Deno.FileInfo }> {
  for (let depth = parts.length; depth > 0; depth -= 1) {
    const info = await lstatOrNull(join(root, ...parts.slice(0, depth)));
    if (info) return { depth, info };
  }
  return { depth: 0, info: await Deno.lstat(root) };
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
  const existing = (await existingPrefix(realRoot, parts)).depth;
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
