/**
 * The walk over a sandbox's workspace after a call (ATTACKS F23, F27) and for `coop check`: every
 * directory at any depth, no symlink followed, each opened from its parent by descriptor
 * (`dir_handle.ts`), up to an entry limit (R12). It finds repositories wherever they are — a
 * `.git`, a bare repository, a worktree's or a submodule's git directory — and hands them to
 * `git_repo_guard.ts`; it notes the other files host tools run by themselves (`.envrc`, VS
 * Code's tasks and settings, pre-commit and husky scripts), which stay warnings.
 *
 * It is synchronous. After a call it runs on the event loop while the workspace is small — each
 * listing one bounded `getdents64` (`src/sandbox/dir_list.ts`), a few dozen directories at most
 * (`scanWorkspaceBounded`) — and on a worker thread otherwise (`scanWorkspaceOffLoop`), so a
 * huge workspace never stalls the gateway's event loop (ATTACKS R12), and a small one does not
 * pay a worker's round trip (~0.2 ms, more than its whole scan).
 * @module
 */
import fs from "node:fs";
import { basename } from "node:path";
import { DEFAULT_SCAN_LIMIT } from "../sandbox/protected_paths.ts";
import { runOffLoop, warmOffLoop } from "../sandbox/off_loop.ts";
import { listDirBounded } from "../sandbox/dir_list.ts";
import { loadTrampoline } from "../sandbox/ffi.ts";
import { type DirEntry, DirHandle, DISABLED_SUFFIX, errnoCode } from "./dir_handle.ts";
import {
  HANDLED_IN_GIT_DIR,
  inspectDotGit,
  inspectGitDir,
  inspectGitSymlink,
  looksLikeGitDir,
  setAsideText,
} from "./git_repo_guard.ts";
import {
  type DirLister,
  NeedsWorker,
  ScanContext,
  ScanStop,
  type WorkspaceScanReport,
} from "./scan_context.ts";

/** Deeper than this the walk stops (an open descriptor per level) and says so. */
const MAX_DEPTH = 200;

/**
 * What a scan on the event loop may read before it hands the workspace to a worker: each
 * listing one buffer of directory records (~680 short names), so many directories, so many
 * entries in all — about 0.5 ms of the event loop at worst, ~20 µs for an empty workspace.
 */
const ON_LOOP = { listingBytes: 16 * 1024, directories: 32, entries: 1024 };
/**
 * The on-loop pass's listing buffer, one for the process: the pass is synchronous (no other
 * scan runs while it lists) and the entries it returns are strings, not views of the buffer;
 * a fresh, zeroed 16 KiB per tool call was garbage for the collector.
 */
let listingBuffer: Uint8Array<ArrayBuffer> | undefined;

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
  return scanWith(workspace, options).report;
}

/** The scan with a given way of listing; `needsWorker` when it stopped for `NeedsWorker`. */
function scanWith(
  workspace: string,
  options: ScanOptions,
  lister?: DirLister,
): { report: WorkspaceScanReport; needsWorker: boolean } {
  let root: string, rootDir: DirHandle;
  try {
    root = fs.realpathSync(workspace);
    rootDir = DirHandle.open(root);
  } catch (error) {
    const missing = errnoCode(error) === "ENOENT";
    const report = {
      workspace,
      entries: 0,
      complete: missing,
      problems: missing ? [] : [`cannot open the workspace: ${errnoCode(error) ?? error}`],
      neutralised: [],
      findings: [],
    };
    return { report, needsWorker: false };
  }
  const ctx = new ScanContext(
    root,
    rootDir,
    options.since,
    options.neutralise,
    options.maxEntries ?? DEFAULT_SCAN_LIMIT,
    lister,
  );
  try {
    walk(ctx, rootDir, 0, false);
  } catch (error) {
    if (error instanceof NeedsWorker) return { report: ctx.report, needsWorker: true };
    // Whatever was neutralised before is in the report, so the owner is told of it too.
    ctx.unverified(error instanceof ScanStop ? error.message : `the scan failed: ${error}`);
  } finally {
    rootDir.close();
  }
  return { report: ctx.report, needsWorker: false };
}

/**
 * The scan after a call: on the event loop while the workspace is small (`ON_LOOP`), else —
 * or when the sandbox library cannot be loaded — on a worker. What the loop's pass already
 * made harmless before it stopped is reported with what the worker then found.
 */
export async function scanWorkspaceBounded(
  workspace: string,
  options: ScanOptions,
): Promise<WorkspaceScanReport> {
  let lib;
  try {
    lib = await loadTrampoline();
  } catch {
    return scanWorkspaceOffLoop(workspace, options);
  }
  const buffer = listingBuffer ??= new Uint8Array(ON_LOOP.listingBytes);
  let directories = 0, entries = 0;
  const lister: DirLister = (dir) => {
    if (++directories > ON_LOOP.directories) throw new NeedsWorker("too many directories");
    const listed = listDirBounded(lib, dir.at("."), buffer);
    if (listed === "too-large") throw new NeedsWorker(`a large directory: ${dir.path}`);
    entries += listed.length;
    if (entries > ON_LOOP.entries) throw new NeedsWorker("too many entries");
    return listed satisfies DirEntry[];
  };
  const first = scanWith(workspace, options, lister);
  if (!first.needsWorker) return first.report;
  const rest = await scanWorkspaceOffLoop(workspace, options);
  const seen = new Set(rest.findings.map((f) => `${f.path}\0${f.changedAt}`));
  return {
    ...rest,
    complete: first.report.complete && rest.complete,
    problems: [...new Set([...first.report.problems, ...rest.problems])],
    neutralised: [...first.report.neutralised, ...rest.neutralised],
    findings: [
      ...first.report.findings.filter((f) => !seen.has(`${f.path}\0${f.changedAt}`)),
      ...rest.findings,
    ],
  };
}

/** Answers a worker that loaded this module to be ready (`warmScanWorkers`). */
export function scanWorkerReady(): boolean {
  return true;
}

/**
 * Starts the scan workers and loads this module in them, in the background: a scan that finds
 * the workspace too big for the event loop then does not wait for, or stall the loop with, a
 * worker's start (the first small scans need no worker at all).
 */
export function warmScanWorkers(): Promise<void> {
  return warmOffLoop(new URL(import.meta.url), "scanWorkerReady");
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
    entries = ctx.list(dir);
  } catch (error) {
    if (error instanceof ScanStop) throw error; // the loop's pass hands over to a worker
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
