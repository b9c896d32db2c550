/**
 * The file tools' only way to touch files: the path is checked (for clear messages), then
 * opened by the kernel beneath the scope root (`openat2(RESOLVE_BENEATH)`), so a symlink a
 * sandbox swaps in between cannot lead the gateway — which runs on the host — outside it.
 * @module
 */
import { errorMessage } from "../errors/coop_error.ts";
import { BeneathError, readFileBeneath, writeFileBeneath } from "../sandbox/mod.ts";
import { assertWriteFits, prepareScopeQuota } from "./file_quota.ts";
import { type PathScope, ToolError } from "./tool_contract.ts";
import { resolveScopedPath, scopedComponents } from "./workspace_path.ts";

function toolError(path: string, scope: PathScope, error: unknown): ToolError {
  if (!(error instanceof BeneathError)) {
    const message = errorMessage(error);
    return new ToolError("tool.io", `cannot access "${path}": ${message}`, { cause: error });
  }
  switch (error.code) {
    case "ENOENT":
      return new ToolError("tool.not_found", `no such file: "${path}"`, { cause: error });
    case "EISDIR":
      return new ToolError("tool.is_directory", `"${path}" is a directory`, { cause: error });
    case "EACCES":
      return new ToolError("tool.permission_denied", `permission denied: "${path}"`, {
        cause: error,
      });
    case "EXDEV":
    case "ELOOP":
      return new ToolError(
        "tool.path_outside_scope",
        `path "${path}" leads outside your workspace (${scope.visibleRoot})`,
        { cause: error },
      );
    case "ENOSPC":
    case "EDQUOT":
      // Past the quota check, only a file system that filled meanwhile answers this.
      return new ToolError(
        "tool.no_space",
        `no space left to write "${path}": ${scope.visibleRoot} is full (its disk or inode quota)`,
        { cause: error },
      );
    case "EINVAL":
      return new ToolError("tool.not_regular_file", `"${path}" is not a regular file`, {
        cause: error,
      });
    default:
      return new ToolError("tool.io", `cannot access "${path}": ${error.code}`, { cause: error });
  }
}

async function relativePath(path: string, scope: PathScope): Promise<string> {
  // First: with a quota image, a path resolved before it is mounted would lead beside it.
  await prepareScopeQuota(scope);
  await resolveScopedPath(path, scope);
  const rel = scopedComponents(path, scope).join("/");
  if (rel === "") throw new ToolError("tool.is_directory", `"${path}" is a directory`);
  return rel;
}

/**
 * Reads a regular file in the scope, at most `maxBytes` (larger: `tool.file_too_large`, naming
 * `tool` and its cap).
 */
export async function readScopedFile(
  path: string,
  scope: PathScope,
  maxBytes: number,
  tool = "read_file",
): Promise<Uint8Array> {
  const rel = await relativePath(path, scope);
  try {
    return await readFileBeneath(scope.hostRoot, rel, maxBytes);
  } catch (error) {
    if (error instanceof BeneathError && error.code === "EFBIG") {
      throw new ToolError(
        "tool.file_too_large",
        `"${path}" is ${error.size} bytes; ${tool} takes at most ${maxBytes}`,
      );
    }
    throw toolError(path, scope, error);
  }
}

/**
 * Creates or replaces a file in the scope, making missing directories. In a non-owner's scope
 * (`scope.protectedNames`) a path through a protected directory is refused, and so is one
 * through a symlink — which could otherwise lead there (ATTACKS F23); a write past the
 * workspace's quotas (`scope.quota`) is refused before anything is written.
 */
export async function writeScopedFile(
  path: string,
  scope: PathScope,
  text: string,
): Promise<number> {
  const rel = await relativePath(path, scope);
  const guarded = scope.protectedNames !== undefined;
  const hit = rel.split("/").find((part) => scope.protectedNames?.includes(part));
  if (hit !== undefined) {
    throw new ToolError(
      "tool.protected_path",
      `"${path}" is inside ${hit}, which is read-only for you: tools on the host trust it ` +
        `(protected_names)`,
    );
  }
  const bytes = new TextEncoder().encode(text);
  await assertWriteFits(scope, { path, rel, size: bytes.length });
  try {
    await writeFileBeneath(scope.hostRoot, rel, bytes, { noSymlinks: guarded });
  } catch (error) {
    if (guarded && error instanceof BeneathError && error.code === "ELOOP") {
      throw new ToolError(
        "tool.symlink_refused",
        `"${path}" goes through a symbolic link; file tools write only real paths in your ` +
          `workspace`,
        { cause: error },
      );
    }
    throw toolError(path, scope, error);
  }
  return bytes.length;
}
