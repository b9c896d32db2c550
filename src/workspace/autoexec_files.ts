/**
 * Files that tools on the host run or load by themselves when the owner works in a directory
 * (ATTACKS F23, F27), as `coop check` and `coop start` list them: git hooks, git config that
 * names a program or leads elsewhere, what Coop set aside after a call (`*.coop-disabled`),
 * direnv's `.envrc`, VS Code's tasks and settings, pre-commit and husky scripts — anywhere in a
 * non-owner's workspace. After each call the executor does more: it neutralises what git would
 * obey (src/workspace/workspace_guard.ts); other tools' files stay warnings.
 * @module
 */
import type { CoopConfig } from "../config/config.ts";
import type { AutoexecFile } from "./scan_context.ts";
import { join } from "node:path";
import { userScopeDirectory } from "../config/user_directories.ts";
import { GROUP_DIRECTORY_PREFIX } from "../config/user_name.ts";
import { readPairedPeople } from "../state/paired_people_reader.ts";
import { scanWorkspaceOffLoop } from "./workspace_scan.ts";

export type { AutoexecFile } from "./scan_context.ts";

/**
 * Auto-run files in `workspace` at any depth (symlinks are not followed). With `changedSince`
 * (ms since the epoch), only those changed since then. Runs on a worker thread. A workspace
 * that cannot be fully read is reported as one entry saying so.
 *
 * @example
 * ```ts
 * for (const f of await autoexecFilesIn("/srv/coop/ws/bob")) console.log(autoexecWarning(f));
 * ```
 */
export async function autoexecFilesIn(
  workspace: string,
  options: { changedSince?: number; maxEntries?: number } = {},
): Promise<AutoexecFile[]> {
  const report = await scanWorkspaceOffLoop(workspace, {
    since: options.changedSince,
    neutralise: false,
    maxEntries: options.maxEntries,
  });
  const unverified = report.problems.map((problem) => ({
    path: report.workspace,
    what: `not fully checked (${problem}): treat repositories and auto-run files there as ` +
      "untrusted",
    changedAt: 0,
  }));
  return [...report.findings, ...unverified];
}

/**
 * Auto-run files in every sandbox's workspace: each non-owner user's, each paired person's, the
 * shared one, and each group chat's (`group-*`, where the owner is sandboxed too).
 */
export async function autoexecInSandboxWorkspaces(config: CoopConfig): Promise<AutoexecFile[]> {
  const users = config.users.filter((u) => u.trust !== "owner");
  const paired = readPairedPeople(config.agent.stateDir);
  const names = [
    ...users.map((u) => u.name),
    ...Array.isArray(paired) ? paired.map((p) => p.name) : [],
  ];
  const dirs = new Map<string, number>();
  for (const name of [...names, null]) {
    const user = users.find((u) => u.name === name);
    const limit = user?.sandbox?.scanLimit ?? config.sandbox.defaults.scanLimit;
    const dir = userScopeDirectory(config, name);
    dirs.set(dir, Math.max(limit, dirs.get(dir) ?? 0));
  }
  for (const dir of groupDirectories(config.agent.workspace)) {
    dirs.set(dir, Math.max(config.sandbox.defaults.scanLimit, dirs.get(dir) ?? 0));
  }
  const found: AutoexecFile[] = [];
  for (const [dir, maxEntries] of dirs) found.push(...await autoexecFilesIn(dir, { maxEntries }));
  return found;
}

/** The warning `coop check` and `coop start` print for one. */
export function autoexecWarning(file: AutoexecFile): string {
  return `warning: ${file.path}: ${file.what} — in a sandbox's workspace; it runs as you if ` +
    `you use that tool there on the host, so read it first`;
}

/** The group chats' directories at the top of the workspace (none when it does not exist). */
function groupDirectories(workspace: string): string[] {
  try {
    return [...Deno.readDirSync(workspace)]
      .filter((e) => e.isDirectory && e.name.startsWith(GROUP_DIRECTORY_PREFIX))
      .map((e) => join(workspace, e.name));
  } catch {
    return [];
  }
}
