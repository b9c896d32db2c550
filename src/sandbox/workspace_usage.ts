/**
 * How much disk space and how many inodes a workspace uses: the measurement behind the
 * accounting path of the disk and inode quotas (disk_quota.ts). A walk of every entry, no
 * symlink followed, each inode counted once (hard links), allocated blocks rather than sizes
 * (a sparse file costs what it holds, a preallocated one what it reserves). It stops past
 * `maxEntries`, and runs on a worker thread (`measureWorkspaceOffLoop`).
 * @module
 */
import fs from "node:fs";
import { runOffLoop } from "./off_loop.ts";

/** A workspace's usage. */
export interface WorkspaceUsage {
  /** Allocated bytes of every file and directory below the workspace (itself included). */
  bytes: number;
  /** Distinct files and directories below the workspace (itself excluded). */
  inodes: number;
  /** False when the walk stopped at `maxEntries` (then the usage is at least this). */
  complete: boolean;
}

/** Measures `workspace` synchronously; prefer `measureWorkspaceOffLoop` in the gateway. */
export function measureWorkspace(workspace: string, maxEntries: number): WorkspaceUsage {
  const seen = new Set<string>();
  let bytes = fs.lstatSync(workspace).blocks * 512, inodes = 0;
  const stack = [workspace];
  while (stack.length) {
    const dir = stack.pop()!;
    let names: string[];
    try {
      names = fs.readdirSync(dir);
    } catch {
      continue; // vanished or unreadable meanwhile: it holds nothing we could count
    }
    for (const name of names) {
      const path = `${dir}/${name}`;
      let stat: fs.Stats;
      try {
        stat = fs.lstatSync(path);
      } catch {
        continue;
      }
      if (stat.nlink > 1 && !stat.isDirectory()) {
        const key = `${stat.dev}:${stat.ino}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      bytes += stat.blocks * 512;
      if (++inodes >= maxEntries) return { bytes, inodes, complete: false };
      if (stat.isDirectory()) stack.push(path);
    }
  }
  return { bytes, inodes, complete: true };
}

/** Answers a worker's warm-up (`warmWorkspaceUsage` in tree_usage.ts): this module is loaded. */
export function usageWorkerReady(): boolean {
  return true;
}

/** `measureWorkspace` on a worker thread, so a large workspace never stalls the event loop. */
export function measureWorkspaceOffLoop(
  workspace: string,
  maxEntries: number,
): Promise<WorkspaceUsage> {
  return runOffLoop<WorkspaceUsage>(
    new URL(import.meta.url),
    "measureWorkspace",
    [workspace, maxEntries],
  );
}
