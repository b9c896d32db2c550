/**
 * Files that tools on the host run or load by themselves when the owner works in a directory
 * (ATTACKS F23): a git hook or a git config key that names a program, direnv's `.envrc`, VS
 * Code's tasks and settings. A non-owner can write them in their own workspace, and they would
 * run as the owner. The sandbox makes existing repositories read-only (`protected_names`), but a
 * repository the user creates is theirs; so the owner is told what is there: after each
 * sandboxed command (what it wrote) and by `coop check` (everything).
 *
 * The scan looks at the workspace's top and one directory down, through the same lookup as the
 * protected paths (`protectedPathsIn`: no listing of big directories, no symlink followed), with
 * synchronous calls (async ones would grow Deno's thread pool); it runs after every non-owner
 * call that can write.
 * @module
 */
import { type BigIntStats, lstatSync } from "node:fs";
import { basename, dirname, join } from "node:path";
import { protectedPathsIn } from "../sandbox/protected_paths.ts";
import type { CoopConfig } from "./config.ts";
import { userScopeDirectory } from "./user_scope.ts";

/** One file a host tool would run or load, and which tool. */
export interface AutoexecFile {
  /** Host path. */
  path: string;
  /** What runs it, e.g. `git hook "post-checkout"` or `direnv`. */
  what: string;
  /** Its last change (ctime), ms since the epoch. */
  changedAt: number;
}

/** Git config keys whose value is a program git runs (or, for `alias.*`, a `!` command). */
const GIT_PROGRAM_KEYS = [
  /^core\.(fsmonitor|hookspath|pager|editor|sshcommand|askpass|gitproxy)$/,
  /^(sequence\.editor|gpg\.program|gpg\.\w+\.program|credential\.helper|diff\.external)$/,
  /^(filter|diff|merge)\.[^.]+\.(clean|smudge|process|textconv|command|driver)$/,
  /^(pager|uploadpack|receivepack|protocol)\./,
  /^include(if\..+)?\.path$/, // another config file, which may set any of the above
];

/** How far the kernel's coarse clock, which stamps ctime, may lag the caller's: one tick. */
const COARSE_CLOCK_MS = 50;

/** node:fs's lstat: a missing path is `undefined`, not an exception (this runs per tool call). */
function statOrNull(path: string): BigIntStats | null {
  try {
    return lstatSync(path, { bigint: true, throwIfNoEntry: false }) ?? null;
  } catch {
    return null; // ENOTDIR, EACCES: nothing we can report there
  }
}

const ctimeMs = (info: BigIntStats) => Number(info.ctimeNs / 1_000_000n);

/**
 * By ctime, which the kernel sets on every change and no one can set back (unlike mtime). Deno
 * reports it in whole seconds, so `since` is rounded down to its second (less a tick of the
 * coarse clock): a file changed earlier in that second counts too, and callers drop repeats.
 */
function changed(info: BigIntStats, since: number | undefined): boolean {
  if (since === undefined) return true;
  return ctimeMs(info) >= Math.floor((since - COARSE_CLOCK_MS) / 1000) * 1000;
}

/** The program-running keys a git config file sets (section.key, lowercased). */
export function gitProgramKeys(configText: string): string[] {
  const found: string[] = [];
  let section = "";
  for (const raw of configText.split("\n")) {
    const line = raw.trim();
    const header = /^\[\s*([^\s\]"]+)(?:\s+"([^"]*)")?\s*\]/.exec(line);
    if (header) {
      section = header[2] === undefined ? header[1] : `${header[1]}.${header[2]}`;
      continue;
    }
    const key = /^([A-Za-z][\w-]*)\s*(=\s*(.*))?$/.exec(line);
    if (!key || !section) continue;
    const name = `${section}.${key[1]}`.toLowerCase();
    const isShellAlias = name.startsWith("alias.") && (key[3] ?? "").trim().startsWith("!");
    if (isShellAlias || GIT_PROGRAM_KEYS.some((pattern) => pattern.test(name))) found.push(name);
  }
  return found;
}

/**
 * The repository directory of `dir`: its `.git` directory, or where a `.git` file (a worktree's)
 * points when that is inside `root` — elsewhere, the user could not have written it.
 */
function gitDirectory(dir: string, root: string): string | null {
  const dotGit = join(dir, ".git");
  const info = statOrNull(dotGit);
  if (info?.isDirectory()) return dotGit;
  if (!info?.isFile()) return null;
  try {
    const target = /^gitdir:\s*(.+)$/m.exec(Deno.readTextFileSync(dotGit))?.[1].trim();
    if (!target) return null;
    const resolved = Deno.realPathSync(target.startsWith("/") ? target : join(dir, target));
    const inside = resolved === root || resolved.startsWith(`${root}/`);
    return inside && statOrNull(resolved)?.isDirectory() ? resolved : null;
  } catch {
    return null;
  }
}

/** The names whose presence in a directory means something host tools may run. */
const CANDIDATES = [".envrc", ".vscode", ".git"];

/** What one candidate entry holds: `.envrc`, `.vscode/*`, or a repository's hooks and config. */
function scanEntry(path: string, root: string, since: number | undefined, found: AutoexecFile[]) {
  const add = (file: string, what: string, info = statOrNull(file)) => {
    if (info?.isFile() && changed(info, since)) {
      found.push({ path: file, what, changedAt: ctimeMs(info) });
    }
  };
  const name = basename(path);
  if (name === ".envrc") return add(path, "direnv (.envrc)");
  if (name === ".vscode") {
    add(join(path, "tasks.json"), "VS Code tasks");
    add(join(path, "settings.json"), "VS Code settings");
    return;
  }
  const git = gitDirectory(dirname(path), root);
  if (!git) return;
  const config = join(git, "config");
  const configInfo = statOrNull(config);
  if (configInfo?.isFile() && changed(configInfo, since)) {
    let keys: string[] = [];
    try {
      keys = gitProgramKeys(Deno.readTextFileSync(config));
    } catch {
      // unreadable: nothing to report from it
    }
    if (keys.length) add(config, `git config sets ${keys.join(", ")}`, configInfo);
  }
  const hooks = join(git, "hooks");
  if (!statOrNull(hooks)?.isDirectory()) return;
  for (const entry of Deno.readDirSync(hooks)) {
    if (entry.name.endsWith(".sample")) continue;
    add(join(hooks, entry.name), `git hook "${entry.name}"`);
  }
}

/**
 * Auto-run files in `workspace` (its top and one directory down; symlinked directories are not
 * followed). With `changedSince` (ms since the epoch), only those modified since then.
 *
 * @example
 * ```ts
 * const started = Date.now();
 * await runSandboxedCommand();
 * for (const f of autoexecFilesIn("/srv/coop/ws/bob", { changedSince: started })) warn(f);
 * ```
 */
export function autoexecFilesIn(
  workspace: string,
  options: { changedSince?: number } = {},
): AutoexecFile[] {
  const found: AutoexecFile[] = [];
  if (!statOrNull(workspace)?.isDirectory()) return found;
  const root = Deno.realPathSync(workspace);
  for (const rel of protectedPathsIn(root, CANDIDATES)) {
    scanEntry(join(root, rel), root, options.changedSince, found);
  }
  // A worktree's `.git` file may point at a repository scanned already.
  const seen = new Set<string>();
  return found.filter((file) => !seen.has(file.path) && seen.add(file.path));
}

/** Auto-run files in every non-owner's workspace (each user's, and the shared one). */
export function autoexecInSandboxWorkspaces(config: CoopConfig): AutoexecFile[] {
  const users = config.users.filter((u) => u.trust !== "owner").map((u) => u.name);
  const dirs = new Set([...users, null].map((user) => userScopeDirectory(config, user)));
  return [...dirs].flatMap((dir) => autoexecFilesIn(dir));
}

/** The warning `coop check` and `coop start` print for one. */
export function autoexecWarning(file: AutoexecFile): string {
  return `warning: ${file.path}: ${file.what} — written in a sandbox's workspace; it runs as ` +
    `you if you use that tool there on the host, so read it first`;
}
