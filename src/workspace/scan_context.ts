/**
 * What one workspace scan knows and collects: the workspace, what counts as changed, whether
 * to neutralise or only report, and the report itself (src/workspace/workspace_scan.ts).
 * @module
 */
import { isInside } from "../sandbox/path_containment.ts";
import { relative } from "node:path";
import { type DirEntry, type DirHandle, errnoCode } from "./dir_handle.ts";
import type { PathTrace } from "./path_trace.ts";

/** One file a host tool would run or load by itself, and which tool (ATTACKS F23). */
export interface AutoexecFile {
  /** Host path. */
  path: string;
  /** What runs it, e.g. `git hook "post-checkout"` or `direnv`. */
  what: string;
  /** Its last change (ctime), ms since the epoch. */
  changedAt: number;
}

/** Something a sandboxed user left that git would obey on the host, made harmless (F27). */
export interface GitNeutralised {
  /** Host path of what git reads (a config, a hook, a pointer such as a `.git` file). */
  path: string;
  /** Host path where the original now is (`….coop-disabled`); git never reads it. */
  keptAs: string;
  /** `config`: rewritten with only its safe entries; `hook`; `pointer`: set aside. */
  kind: "config" | "hook" | "pointer";
  /** For a config, the names of the entries removed (never values); else what it was. */
  keys: string[];
  /** Why, in words. */
  reason: string;
}

/** What a scan found and did. */
export interface WorkspaceScanReport {
  /** The workspace scanned (resolved). */
  workspace: string;
  /** Directory entries read. */
  entries: number;
  /** False when some part could not be verified (too many entries, unreadable, a failure). */
  complete: boolean;
  /** Why it is incomplete, for the owner. */
  problems: string[];
  /** What was made harmless (after a call). */
  neutralised: GitNeutralised[];
  /** Auto-run files to read (`.envrc`, VS Code tasks …), and in report mode git's too. */
  findings: AutoexecFile[];
}

/** How far the kernel's coarse clock, which stamps ctime, may lag the caller's: one tick. */
const COARSE_CLOCK_MS = 50;

/** Thrown to end a scan early (the entry limit); the report says why. */
export class ScanStop extends Error {}

/**
 * Thrown by a scan on the event loop that met more than it may read there (a listing larger
 * than its buffer, too many directories); a worker scans the workspace again.
 */
export class NeedsWorker extends ScanStop {}

/** Reads a directory's entries (`DirHandle.list`, or a bounded listing on the event loop). */
export type DirLister = (dir: DirHandle) => DirEntry[];

/** The state of one scan. */
export class ScanContext {
  readonly report: WorkspaceScanReport;
  readonly #changedFrom: number | undefined;

  constructor(
    /** The workspace, resolved. */
    readonly root: string,
    /** The workspace, held open. */
    readonly rootDir: DirHandle,
    /** Only what changed since then (ms) counts; undefined: everything (report mode). */
    since: number | undefined,
    /** True after a call: make things harmless; false: only report (`coop check`). */
    readonly neutralise: boolean,
    readonly maxEntries: number,
    /** How directories are listed (default: `DirHandle.list`, on a worker). */
    readonly list: DirLister = (dir) => dir.list(maxEntries - this.report.entries + 1),
  ) {
    this.report = {
      workspace: root,
      entries: 0,
      complete: true,
      problems: [],
      neutralised: [],
      findings: [],
    };
    // ctime comes in whole seconds here: round `since` down to its second, less a tick of the
    // coarse clock. A file changed earlier in that second counts too (callers drop repeats).
    this.#changedFrom = since === undefined
      ? undefined
      : Math.floor((since - COARSE_CLOCK_MS) / 1000) * 1000;
  }

  /** Whether something with this ctime changed in the window (always, in report mode). */
  changed(ctimeMs: number): boolean {
    return this.#changedFrom === undefined || ctimeMs >= this.#changedFrom;
  }

  /** Whether a resolved path is the workspace or below it. */
  inside(path: string): boolean {
    return isInside(path, this.root);
  }

  /** Whether a traced path passes a symlink inside the workspace that changed in the window. */
  viaChangedLink(trace: PathTrace): boolean {
    return trace.links.some((link) => this.inside(link.path) && this.changed(link.ctimeMs));
  }

  /** Counts entries read; stops the scan past the limit. */
  count(entries: number): void {
    this.report.entries += entries;
    if (this.report.entries > this.maxEntries) {
      throw new ScanStop(
        `the workspace has more than ${this.maxEntries} entries (sandbox.workspace_scan_limit)`,
      );
    }
  }

  /** Records a part that could not be verified: the scan is incomplete. */
  unverified(problem: string): void {
    this.report.complete = false;
    this.report.problems.push(problem);
  }

  /**
   * Runs `fn` on a directory inside the workspace given by its resolved path, opened from the
   * workspace one real directory at a time (nothing on the way may be a symlink).
   */
  withDir(path: string, fn: (dir: DirHandle) => void): void {
    let dir: DirHandle | null;
    try {
      dir = this.rootDir.openPath(relative(this.root, path));
    } catch (error) {
      return this.unverified(`cannot open ${path}: ${errnoCode(error)}`);
    }
    if (!dir) return;
    try {
      fn(dir);
    } finally {
      dir.close();
    }
  }

  /** Records an auto-run file for the owner. */
  finding(path: string, what: string, changedAt: number): void {
    this.report.findings.push({ path, what, changedAt });
  }

  /** Records something made harmless. */
  neutralised(record: GitNeutralised): void {
    this.report.neutralised.push(record);
  }
}
