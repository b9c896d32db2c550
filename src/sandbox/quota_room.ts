/**
 * The room a workspace has left under its disk and inode quotas, for what the gateway writes
 * there itself on a sandboxed user's behalf (the file tools run on the host, outside every
 * sandbox): measured the way the quota of their commands counts (disk_quota.ts), so that such a
 * write is refused before it starts instead of found over quota after it. With a hard quota the
 * workspace is its own loop-mounted file system, whose free blocks and inodes (`statfs`) are the
 * kernel's own answer; with accounting, the workspace's measured usage (tree_usage.ts) against
 * the quotas.
 * @module
 */
import { statfsSync } from "node:fs";
import { SandboxQuotaError } from "./errors.ts";
import { ensureLoopQuota } from "./loop_quota.ts";
import { measureWorkspaceBounded } from "./tree_usage.ts";

/** A workspace's quotas, as a policy sets them. */
export interface WorkspaceQuotas {
  /** Disk space the workspace may use, in bytes (`disk_quota`); unset: none. */
  diskQuotaBytes?: number;
  /** Files and directories it may hold (`inode_quota`); unset: none. */
  inodeQuota?: number;
  /** Most entries measured when only a disk quota is set (`workspace_scan_limit`). */
  scanLimit: number;
}

/** How a workspace's quotas are enforced, and why not hard (`DiskQuotaReport.reason`). */
export type QuotaEnforcement =
  | { enforcement: "loop-image" }
  | { enforcement: "accounting"; reason: string };

/** One quota's standing: the limit, what is in use, what is left (negative: over it). */
export interface QuotaStanding {
  /** The limit: bytes, or files and directories. */
  limit: number;
  /** In use now, counted as the quota counts. */
  used: number;
  /** What a write may still add. */
  left: number;
}

/** A workspace's room under its quotas, measured once. */
export interface QuotaRoom {
  /** `loop-image`: its own file system (statfs); `accounting`: its measured usage. */
  enforcement: "loop-image" | "accounting";
  /** Disk space in bytes; null without a disk quota. */
  bytes: QuotaStanding | null;
  /**
   * Files and directories; null without an inode quota (with a loop image, the limit is its
   * file system's inode count, which bounds the sandbox's commands too).
   */
  inodes: QuotaStanding | null;
}

/** Entries to measure: one past the inode quota is enough to know it is exceeded. */
export function quotaScanEntries(quotas: WorkspaceQuotas): number {
  return quotas.inodeQuota !== undefined ? quotas.inodeQuota + 1 : quotas.scanLimit;
}

/**
 * Makes `workspace` what a sandboxed command under `quotas` would see — with a disk quota, on a
 * root gateway, its quota image mounted there (made first when it is empty) — and says how the
 * quotas are enforced; null without quotas. The gateway's own file access must come after it:
 * before, a write would land beside the image, hidden once the next command mounts it.
 *
 * @example
 * ```ts
 * const how = await prepareQuotaWorkspace("/srv/ws/bob", { diskQuotaBytes: 2 ** 30, scanLimit: 1e5 });
 * how?.enforcement; // "loop-image" as root, else "accounting"
 * ```
 */
export async function prepareQuotaWorkspace(
  workspace: string,
  quotas: WorkspaceQuotas,
): Promise<QuotaEnforcement | null> {
  if (quotas.diskQuotaBytes === undefined && quotas.inodeQuota === undefined) return null;
  if (quotas.diskQuotaBytes === undefined) {
    return {
      enforcement: "accounting",
      reason: "hard quotas need a disk_quota (the size of the workspace's own file system)",
    };
  }
  const hard = await ensureLoopQuota(workspace, quotas.diskQuotaBytes, quotas.inodeQuota);
  return "image" in hard ? { enforcement: "loop-image" } : { enforcement: "accounting", ...hard };
}

/**
 * Measures the room `workspace` has under `quotas` (preparing it first, as
 * `prepareQuotaWorkspace`); null without quotas. Throws SandboxQuotaError when it has too many
 * entries to measure its disk quota (fail closed, as a command would be refused).
 *
 * @example
 * ```ts
 * const room = await measureQuotaRoom("/srv/ws/bob", { diskQuotaBytes: 2 ** 30, scanLimit: 1e5 });
 * if (room?.bytes && room.bytes.left < 4096) console.log("no room for another block");
 * ```
 */
export async function measureQuotaRoom(
  workspace: string,
  quotas: WorkspaceQuotas,
): Promise<QuotaRoom | null> {
  const prepared = await prepareQuotaWorkspace(workspace, quotas);
  if (prepared === null) return null;
  if (prepared.enforcement === "loop-image") {
    // One syscall; bavail, not bfree: ext4 keeps a few blocks back even with `-m 0`.
    const fs = statfsSync(workspace);
    return {
      enforcement: "loop-image",
      bytes: {
        limit: quotas.diskQuotaBytes!,
        used: (fs.blocks - fs.bfree) * fs.bsize,
        left: fs.bavail * fs.bsize,
      },
      inodes: { limit: quotas.inodeQuota ?? fs.files, used: fs.files - fs.ffree, left: fs.ffree },
    };
  }
  const maxEntries = quotaScanEntries(quotas);
  const usage = await measureWorkspaceBounded(workspace, maxEntries);
  if (!usage.complete && quotas.inodeQuota === undefined) {
    throw new SandboxQuotaError(
      `the workspace ${workspace} has more than ${maxEntries} entries, too many to measure ` +
        "its disk quota (the scan limit); nothing was written. Set an inode_quota below it, " +
        "or raise workspace_scan_limit",
    );
  }
  const { diskQuotaBytes: disk, inodeQuota: inodes } = quotas;
  return {
    enforcement: "accounting",
    bytes: disk === undefined ? null : { limit: disk, used: usage.bytes, left: disk - usage.bytes },
    inodes: inodes === undefined
      ? null
      : { limit: inodes, used: usage.inodes, left: inodes - usage.inodes },
  };
}
