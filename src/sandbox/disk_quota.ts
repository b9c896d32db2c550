/**
 * Disk and inode quotas of a workspace. Hard where the host allows it: a root gateway gives an
 * empty workspace its own loop-mounted file system of the quota's size (loop_quota.ts), and the
 * kernel answers ENOSPC. Otherwise by enforced accounting: the workspace is measured before
 * each command (over quota: the command is refused), every file a process writes is bounded by
 * what is left (RLIMIT_FSIZE), a watchdog re-measures while the command runs and kills the
 * sandbox once it goes over, and the usage after the command is reported. Accounting needs no
 * privilege (docs/limits.md "Disk and inode quotas").
 * @module
 */
import { formatByteSize } from "./byte_size.ts";
import { SandboxQuotaError } from "./errors.ts";
import type { SandboxPolicy } from "./policy.ts";
import { prepareQuotaWorkspace, quotaScanEntries } from "./quota_room.ts";
import { measureWorkspaceBounded, warmWorkspaceUsage } from "./tree_usage.ts";
import type { WorkspaceUsage } from "./workspace_usage.ts";

/** How often the watchdog re-measures a running command's workspace. */
export const QUOTA_WATCH_INTERVAL_MS = 200;

/** What the quota did for one command (`ExecResult.disk`). */
export interface DiskQuotaReport {
  /**
   * How the quota is enforced: `loop-image` (the workspace's own file system: hard), or
   * `accounting` (measured and refused, bounded per file, watched).
   */
  enforcement: "loop-image" | "accounting";
  /** Why a hard quota does not apply (accounting), or null. */
  reason: string | null;
  /** The disk quota in bytes, or null. */
  quotaBytes: number | null;
  /** The inode quota, or null. */
  inodeQuota: number | null;
  /** The workspace's usage before the command (null with a loop image: nothing to measure). */
  before: WorkspaceUsage | null;
  /** Its usage after the command (null with a loop image). */
  after: WorkspaceUsage | null;
  /** RLIMIT_FSIZE the command ran under: the quota left (or the policy's, if smaller). */
  fileSizeBytes: number;
  /** The watchdog killed the sandbox because the workspace went over its quota. */
  killed: boolean;
  /** Over quota after the command: the next command will be refused. */
  exceeded: boolean;
}

/**
 * Blocks a file of `size` bytes may take beyond its data: RLIMIT_FSIZE bounds the size, the
 * quota counts allocated blocks, and a fragmented file takes extent-tree blocks besides (ext4:
 * a 4 KiB block per ≤ 340 extents of ≥ 4 KiB each, plus the levels above). Without this a file
 * stopped exactly at the quota left went over it by a block whenever the file system split it
 * into more than the inode's four extents (a test that failed under load on CI).
 */
function fileMetadataBytes(size: number): number {
  if (!Number.isFinite(size) || size === 0) return 0;
  return Math.min(size, Math.ceil(size / 256) + 16 * 1024);
}

function over(policy: SandboxPolicy, usage: WorkspaceUsage): string | null {
  if (policy.inodeQuota !== undefined && usage.inodes > policy.inodeQuota) {
    return `${usage.complete ? "" : "more than "}${usage.inodes} files and directories, over ` +
      `its inode quota of ${policy.inodeQuota}`;
  }
  if (policy.diskQuotaBytes !== undefined && usage.bytes > policy.diskQuotaBytes) {
    return `${formatByteSize(usage.bytes)} bytes, over its disk quota of ` +
      formatByteSize(policy.diskQuotaBytes);
  }
  return null;
}

/** One command's quota: the check before, the per-file bound, the watchdog, the report. */
export class DiskQuotaWatch {
  readonly #policy: SandboxPolicy;
  readonly #before: WorkspaceUsage | null;
  readonly #maxEntries: number;
  readonly #reason: string | null;
  #timer: ReturnType<typeof setInterval> | undefined;
  #measuring: Promise<void> | null = null;
  #killed = false;

  private constructor(
    policy: SandboxPolicy,
    before: WorkspaceUsage | null,
    maxEntries: number,
    reason: string | null,
  ) {
    this.#policy = policy;
    this.#before = before;
    this.#maxEntries = maxEntries;
    this.#reason = reason;
  }

  /**
   * Measures the workspace; null when the policy sets no quota. Throws SandboxQuotaError when
   * it is over quota, or too large to measure (fail closed).
   */
  static async before(policy: SandboxPolicy): Promise<DiskQuotaWatch | null> {
    const prepared = await prepareQuotaWorkspace(policy.workspace, policy);
    if (prepared === null) return null;
    if (prepared.enforcement === "loop-image") return new DiskQuotaWatch(policy, null, 0, null);
    const { reason } = prepared;
    const maxEntries = quotaScanEntries(policy);
    // The watchdog's measurements of a workspace past the on-loop bound need a worker at once.
    await warmWorkspaceUsage();
    const usage = await measureWorkspaceBounded(policy.workspace, maxEntries);
    const problem = over(policy, usage);
    if (problem) {
      throw new SandboxQuotaError(
        `the workspace ${policy.workspace} holds ${problem}; the command did not run. ` +
          "Delete files there (the owner can), or raise disk_quota / inode_quota",
      );
    }
    if (!usage.complete && policy.inodeQuota === undefined) {
      throw new SandboxQuotaError(
        `the workspace ${policy.workspace} has more than ${maxEntries} entries, too many to ` +
          "measure its disk quota (the scan limit); the command did not run. Set an " +
          "inode_quota below it, or raise workspace_scan_limit",
      );
    }
    return new DiskQuotaWatch(policy, usage, maxEntries, reason);
  }

  /**
   * RLIMIT_FSIZE for the command: the quota left less what the file system allocates beside a
   * file's data, or the policy's limit if smaller.
   */
  get fileSizeBytes(): number {
    if (this.#before === null) return this.#policy.fileSizeBytes; // the file system bounds it
    const left = this.#policy.diskQuotaBytes === undefined
      ? Infinity
      : Math.max(0, this.#policy.diskQuotaBytes - this.#before.bytes);
    return Math.min(this.#policy.fileSizeBytes, left - fileMetadataBytes(left));
  }

  /** Starts the watchdog: `kill` ends the sandbox once its workspace goes over quota. */
  watch(kill: () => void): void {
    if (this.#before === null) return;
    this.#timer = setInterval(() => {
      if (this.#measuring || this.#killed) return;
      this.#measuring = measureWorkspaceBounded(this.#policy.workspace, this.#maxEntries)
        .then((usage) => {
          if (over(this.#policy, usage) && this.#timer !== undefined) {
            this.#killed = true;
            kill();
          }
        }, () => {})
        .finally(() => (this.#measuring = null));
    }, QUOTA_WATCH_INTERVAL_MS);
  }

  /** Stops the watchdog and measures the workspace after the command. */
  async finish(): Promise<DiskQuotaReport> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#measuring;
    const quotas = {
      quotaBytes: this.#policy.diskQuotaBytes ?? null,
      inodeQuota: this.#policy.inodeQuota ?? null,
      fileSizeBytes: this.fileSizeBytes,
    };
    if (this.#before === null) {
      return {
        enforcement: "loop-image",
        reason: null,
        ...quotas,
        before: null,
        after: null,
        killed: false,
        exceeded: false,
      };
    }
    const after = await measureWorkspaceBounded(this.#policy.workspace, this.#maxEntries);
    return {
      enforcement: "accounting",
      reason: this.#reason,
      ...quotas,
      before: this.#before,
      after,
      killed: this.#killed,
      exceeded: over(this.#policy, after) !== null,
    };
  }
}
