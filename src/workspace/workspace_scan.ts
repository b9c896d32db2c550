/**
 * The walk over a sandbox's workspace after a call (ATTACKS F23, F27) and for `coop check`: every
 * directory at any depth, no symlink followed, each opened from its parent by descriptor
 * (`dir_handle.ts`), up to an entry limit (R12). It finds repositories wherever they are — a
 * `.git`, a bare repository, a worktree's or a submodule's git directory — and hands them to
 * `git_repo_guard.ts`; it notes the other files host tools run by themselves (`.envrc`, VS
 * Code's tasks and settings, pre-commit and husky scripts), which stay warnings.
 *
 * It is synchronous and runs on a worker thread (`scanWorkspaceOffLoop`), so a huge workspace
 * never stalls the gateway's event loop.
 * @module
 */
import fs from "node:fs";
import { basename } from "node:path";
import { DEFAULT_SCAN_LIMIT, runOffLoop } from "../sandbox/mod.ts";
import { DirHandle, DISABLED_SUFFIX, errnoCode } from "./dir_handle.ts";
import {
  HANDLED_IN_GIT_DIR,
  inspectDotGit,
  inspectGitDir,
  inspectGitSymlink,
  looksLikeGitDir,
  setAsideText,
} from "./git_repo_guard.ts";
import { ScanContext, ScanStop, type WorkspaceScanReport } from "./scan_context.ts";

/** Deeper than this the walk stops (an open descriptor per level) and says so. */
const MAX_DEPTH = 200;

/** How a scan runs. */
export interface ScanOptions {
  /** Only what changed since then (ms since the epoch) counts; absent: everything. */
  since?: number;
  /** After a call: neutralise. Otherwise (`coop check`) only report. */
  neutralise: boolean;
  /** Most directory entries to read (default `DEFAULT_SCAN_LIMIT`). */
  maxEntries?: number;
}

/** Files other tools run or load by themselves, by name, with what runs them. */
const AUTOEXEC_NAMES = new Map([
  [".envrc", "direnv (.envrc)"],
  [".pre-commit-config.yaml", "pre-commit (its hooks run what this file names)"],
]);
/** The same for files in directories of these names. */
const AUTOEXEC_IN_DIR = new Map<string, (name: string) => string | undefined>([
  [
    ".vscode",
    (name) =>
      new Map([["tasks.json", "VS Code tasks"], ["settings.json", "VS Code settings"]]).get(name),
  ],
  [".husky", () => "husky (a git hook runs it)"],
]);

/**
 * Scans `workspace` synchronously. Prefer `scanWorkspaceOffLoop` in the gateway.
 *
 * @example
 * ```ts
 * const report = scanWorkspace("/srv/coop/ws/bob", { since: started, neutralise: true });
 * for (const n of report.neutralised) console.log(n.path, n.keys);
 * ```
 */
export function scanWorkspace(workspace: string, options: ScanOptions): WorkspaceScanReport {
  let root: string, rootDir: DirHandle;
  try {
    root = fs.realpathSync(workspace);
    rootDir = DirHandle.open(root);
  } catch (error) {
    const missing = errnoCode(error) === "ENOENT";
    return {
      workspace,
      entries: 0,
      complete: missing,
      problems: missing ? [] : [`cannot open the workspace: ${errnoCode(error) ?? error}`],
      neutralised: [],
      findings: [],
    };
  }
  const ctx = new ScanContext(
    root,
    rootDir,
    options.since,
    options.neutralise,
    options.maxEntries ?? DEFAULT_SCAN_LIMIT,
  );
  try {
    walk(ctx, rootDir, 0, false);
  } catch (error) {
    // Whatever was neutralised before is in the report, so the owner is told of it too.
    ctx.unverified(error instanceof ScanStop ? error.message : `the scan failed: ${error}`);
  } finally {
    rootDir.close();
  }
  return ctx.report;
}

/** `scanWorkspace` on a worker thread: the event loop stays free however big the workspace. */
export function scanWorkspaceOffLoop(
  workspace: string,
  options: ScanOptions,
): Promise<WorkspaceScanReport> {
  return runOffLoop(new URL(import.meta.url), "scanWorkspace", [workspace, options]);
}

function walk(ctx: ScanContext, dir: DirHandle, depth: number, inGit: boolean): void {
  if (depth > MAX_DEPTH) throw new ScanStop(`directories nest deeper than ${MAX_DEPTH} levels`);
  let entries;
  try {
    entries = dir.list();
  } catch (error) {
    return ctx.unverified(`cannot read ${dir.path}: ${errnoCode(error) ?? error}`);
  }
  ctx.count(entries.length);
  const kinds = new Map(entries.map((e) => [e.name, e.kind]));
  const gitDir = looksLikeGitDir(kinds);
  if (gitDir) inspectGitDir(ctx, dir, new Set(kinds.keys()));
  const git = inGit || gitDir;
  const inAutoexecDir = AUTOEXEC_IN_DIR.get(basename(dir.path));
  for (const { name, kind } of entries) {
    if (git) {
      if (kind === "symlink" && !(gitDir && HANDLED_IN_GIT_DIR.has(name))) {
        inspectGitSymlink(ctx, dir, name);
      }
      continue;
    }
    if (name === ".git" && kind !== "dir") inspectDotGit(ctx, dir, kind);
    else if (name.startsWith(`.git${DISABLED_SUFFIX}`) && !ctx.neutralise) {
      ctx.finding(`${dir.path}/${name}`, setAsideText("git"), 0);
    } else if (kind === "file" && (inAutoexecDir || AUTOEXEC_NAMES.has(name))) {
      const what = AUTOEXEC_NAMES.get(name) ?? inAutoexecDir?.(name);
      if (what) noteAutoexec(ctx, dir, name, what);
    }
  }
  for (const { name, kind } of entries) {
    if (kind !== "dir") continue;
    // Loose objects fan out into 256 directories git only reads by hash; hooks are checked
    // by inspectGitDir.
    if (git && (/^[0-9a-f]{2}$/.test(name) || (gitDir && name === "hooks"))) continue;
    let child: DirHandle | null;
    try {
      child = dir.openDir(name);
    } catch (error) {
      ctx.unverified(`cannot open ${dir.path}/${name}: ${errnoCode(error) ?? error}`);
      continue;
    }
    if (!child) continue; // swapped for a symlink since we listed it: never followed
    try {
      walk(ctx, child, depth + 1, git);
    } finally {
      child.close();
    }
  }
}

function noteAutoexec(ctx: ScanContext, dir: DirHandle, name: string, what: string): void {
  const info = dir.lstat(name);
  if (info && ctx.changed(info.ctimeMs)) ctx.finding(`${dir.path}/${name}`, what, info.ctimeMs);
}
