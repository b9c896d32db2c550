/**
 * The file tools under a non-owner's workspace quotas (`disk_quota`, `inode_quota`). They write
 * from the gateway, on the host, where no sandbox bounds them: without this, `write_file` and
 * `edit_file` could take a workspace past both quotas, and only the next command would notice.
 * So they see the workspace as the user's commands do (its quota image mounted, if it has one),
 * and a write that would go past either quota is refused before anything is written, measured
 * as the commands' quota measures (src/sandbox/quota_room.ts, docs/limits.md).
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { formatByteSize } from "../sandbox/byte_size.ts";
import {
  measureQuotaRoom,
  prepareQuotaWorkspace,
  type QuotaRoom,
  type QuotaStanding,
  SandboxQuotaError,
} from "../sandbox/mod.ts";
import { type PathScope, ToolError } from "./tool_contract.ts";
import { existingPrefix } from "./workspace_path.ts";

const log = getLogger(["coop", "tools"]);

/** What a write adds to the workspace: allocated bytes, and files and directories. */
interface WriteNeed {
  bytes: number;
  inodes: number;
}

/**
 * Makes the scope's workspace what the user's sandboxed commands see: with a quota image (a
 * root gateway), mounted, so that the file tools read and write inside it, not beside it.
 */
export async function prepareScopeQuota(scope: PathScope): Promise<void> {
  if (scope.quota) await prepareQuotaWorkspace(scope.hostRoot, scope.quota);
}

/**
 * What writing `size` bytes to `rel` adds: the file's blocks less those of the file it replaces
 * (the quota counts allocated blocks), a block for each directory made, and one inode for each
 * path component that does not exist yet.
 */
async function writeNeed(root: string, rel: string, size: number): Promise<WriteNeed> {
  const parts = rel.split("/");
  const { depth, info } = await existingPrefix(root, parts);
  const missing = parts.length - depth;
  // Not a regular file there: the write fails on its own (EISDIR …), adding nothing.
  if (missing === 0 && !info.isFile) return { bytes: 0, inodes: 0 };
  const block = info.blksize || 4096;
  const replaced = missing === 0 ? (info.blocks ?? 0) * 512 : 0;
  // A new directory takes a block on ext4 (none on tmpfs: counted anyway, to be safe).
  const directories = Math.max(0, missing - 1);
  const bytes = Math.ceil(size / block) * block - replaced + directories * block;
  return { bytes, inodes: missing };
}

function sizeText(bytes: number): string {
  return `${formatByteSize(Math.max(0, bytes))} bytes`;
}

/** Why a write does not fit: the quota, its standing, what the write needed, the message. */
interface Refusal {
  quota: "disk_quota" | "inode_quota";
  standing: QuotaStanding;
  needed: number;
  message: string;
}

/** The refusal the model reads, or null when the write fits. */
function refusal(path: string, scope: PathScope, room: QuotaRoom, need: WriteNeed): Refusal | null {
  const where = `your workspace (${scope.visibleRoot})`;
  if (room.inodes && need.inodes > room.inodes.left) {
    const { limit, used, left } = room.inodes;
    const quota = scope.quota?.inodeQuota !== undefined
      ? `its inode_quota of ${limit}`
      : `the ${limit} inodes of its disk_quota's file system`;
    // Over it already (a command went past, or the walk stopped there): any growth is refused.
    const state = left < 0 ? `is over ${quota}` : `holds ${used} of ${quota} (${left} left)`;
    const adds = need.inodes > 0
      ? `${need.inodes} new files and directories`
      : `${sizeText(need.bytes)} more`;
    return {
      quota: "inode_quota",
      standing: room.inodes,
      needed: need.inodes,
      message: `"${path}" needs ${adds}; ${where} ${state}`,
    };
  }
  if (room.bytes && need.bytes > room.bytes.left) {
    const { limit, used, left } = room.bytes;
    return {
      quota: "disk_quota",
      standing: room.bytes,
      needed: need.bytes,
      message: `"${path}" needs ${sizeText(need.bytes)} more; ${where} uses ${sizeText(used)} ` +
        `of its disk_quota of ${sizeText(limit)} (${sizeText(left)} left)`,
    };
  }
  return null;
}

/**
 * Throws ToolError `tool.quota_exceeded` when writing `size` bytes to `rel` (below the scope's
 * root; `path` as the model named it) would take the workspace past its disk or inode quota;
 * nothing is written then. A write that adds nothing (an overwrite no larger) is never refused.
 */
export async function assertWriteFits(
  scope: PathScope,
  write: { path: string; rel: string; size: number },
): Promise<void> {
  if (!scope.quota) return;
  const need = await writeNeed(scope.hostRoot, write.rel, write.size);
  if (need.bytes <= 0 && need.inodes === 0) return; // it frees space, or keeps it: always fine
  let room: QuotaRoom | null;
  try {
    room = await measureQuotaRoom(scope.hostRoot, scope.quota);
  } catch (error) {
    if (!(error instanceof SandboxQuotaError)) throw error;
    throw new ToolError(
      "tool.quota_exceeded",
      `"${write.path}" was not written: your workspace has more entries than ` +
        `workspace_scan_limit, too many to measure against its disk_quota. Delete files there; ` +
        `the owner can set an inode_quota or raise workspace_scan_limit`,
      { cause: error },
    );
  }
  if (room === null) return;
  const refused = refusal(write.path, scope, room, need);
  if (refused === null) return;
  log.warn(
    "tool.quota_exceeded {path}: the write needs {needed} against {quota} {limit}, " +
      "{used} in use; refused",
    {
      event: "tool.quota_exceeded",
      workspace: scope.hostRoot,
      path: write.rel,
      quota: refused.quota,
      limit: refused.standing.limit,
      used: refused.standing.used,
      left: refused.standing.left,
      needed: refused.needed,
      enforcement: room.enforcement,
    },
  );
  throw new ToolError(
    "tool.quota_exceeded",
    `${refused.message}; nothing was written. Delete files in your workspace or write less ` +
      `(only the owner can raise ${refused.quota})`,
  );
}
