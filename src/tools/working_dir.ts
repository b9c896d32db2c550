/**
 * `working_dir` of `bash` and `exec`: a directory in the caller's own workspace, resolved on
 * the host (every symlink followed) and refused, before anything runs, when it leads outside.
 * @module
 */
import { relative } from "node:path";
import { isInside } from "../sandbox/path_containment.ts";
import { type PathScope, ToolError } from "./tool_contract.ts";
import { resolveScopedPath } from "./workspace_path.ts";

/**
 * Returns `requested` as a path below the scope's real root (`""` for the root itself), after
 * checking that it exists, is a directory and — symlinks followed — stays inside the scope.
 * Throws `tool.working_dir_outside`, `tool.working_dir_missing` or `tool.working_dir_not_dir`.
 *
 * @example
 * ```ts
 * await resolveWorkingDir("src", { hostRoot: "/srv/ws/bob", visibleRoot: "/work" }, "bash"); // "src"
 * await resolveWorkingDir("../alice", scope, "bash"); // throws tool.working_dir_outside
 * ```
 */
export async function resolveWorkingDir(
  requested: string,
  scope: PathScope,
  tool: string,
): Promise<string> {
  const outside = (why: string) =>
    new ToolError(
      "tool.working_dir_outside",
      `${tool}: working_dir "${requested}" is outside your workspace (${scope.visibleRoot}): ` +
        `${why}; give a directory inside it, relative to it or under ${scope.visibleRoot}`,
    );
  let resolved: string;
  try {
    resolved = await resolveScopedPath(requested, scope);
  } catch (error) {
    if (!(error instanceof ToolError)) throw error;
    if (error.code === "tool.invalid_path" && requested.split("/").includes("..")) {
      throw outside('".." leaves it');
    }
    if (error.code === "tool.path_outside_scope") {
      const lexicallyInside = !requested.startsWith("/") ||
        isInside(requested, scope.visibleRoot) || isInside(requested, scope.hostRoot);
      throw outside(
        lexicallyInside ? "a symbolic link leads out of it" : "that path is not below it",
      );
    }
    throw new ToolError("tool.invalid_arguments", `${tool}: working_dir: ${error.message}`);
  }
  const realRoot = await Deno.realPath(scope.hostRoot);
  // resolveScopedPath already checked the longest existing prefix; the directory must exist
  // now, so its real path is checked whole (a symlink at its end included).
  let real: string;
  try {
    real = await Deno.realPath(resolved);
  } catch {
    throw new ToolError(
      "tool.working_dir_missing",
      `${tool}: working_dir "${requested}" does not exist in your workspace; create it first`,
    );
  }
  if (!isInside(real, realRoot)) throw outside("a symbolic link leads out of it");
  const info = await Deno.stat(real);
  if (!info.isDirectory) {
    throw new ToolError(
      "tool.working_dir_not_dir",
      `${tool}: working_dir "${requested}" is not a directory`,
    );
  }
  return relative(realRoot, real);
}
