/**
 * One git config file of a repository in a sandbox's workspace (ATTACKS F27). A file that
 * changed during the call and holds anything of `git_danger.ts`, or anything our parser cannot
 * read, is rewritten with only its safe entries — serialised by us, so a line git and our parser
 * might read differently never survives — and the original is set aside as
 * `<name>.coop-disabled`. A file that did not change (the owner's) is left alone, except where it
 * makes git run or read something the call did change: an included file, a `core.hooksPath`
 * directory, a script named in a program-running entry.
 * @module
 */
import { dirname, relative } from "node:path";
import { type DirHandle, errnoCode } from "./dir_handle.ts";
import { dangerClassesOf, isSafeGitEntry } from "./git_danger.ts";
import {
  entryName,
  type GitConfigEntry,
  parseGitConfig,
  serializeGitConfig,
} from "./git_config_parser.ts";
import { type PathTrace, tracePath } from "./path_trace.ts";
import type { ScanContext } from "./scan_context.ts";

/** A config larger than this is not parsed: it is treated as unreadable. */
const MAX_CONFIG_BYTES = 1 << 20;
/** git's own limit on nested includes. */
const MAX_INCLUDE_DEPTH = 10;

/** Where a repository's relative paths start. */
export interface RepoPaths {
  /** The git directory. */
  gitDir: string;
  /** The top of its working tree (the git directory itself when bare). */
  top: string;
}

/** Called for a hooks directory an unchanged config names (`core.hooksPath`). */
export type HooksInspector = (ctx: ScanContext, hooks: DirHandle) => void;

/** Checks config file `name` in `dir` (and, for an unchanged one, what it leads to). */
export function inspectConfig(
  ctx: ScanContext,
  dir: DirHandle,
  name: string,
  repo: RepoPaths,
  inspectHooks: HooksInspector,
  depth = 0,
): void {
  const path = `${dir.path}/${name}`;
  const info = dir.lstat(name);
  if (!info) return;
  if (info.isSymbolicLink()) return inspectLinkedConfig(ctx, dir, name, info.ctimeMs);
  if (!info.isFile()) return;
  let bytes: Uint8Array | "too-large" | null;
  try {
    bytes = dir.readFile(name, MAX_CONFIG_BYTES);
  } catch (error) {
    bytes = null; // EACCES: a file mode the user set; the owner's git could not read it either
    if (!ctx.changed(info.ctimeMs)) {
      return ctx.unverified(`cannot read ${path}: ${errnoCode(error)}`);
    }
  }
  const parsed = bytes instanceof Uint8Array
    ? parseGitConfig(bytes)
    : { entries: [], error: { line: 0, message: bytes ? "larger than 1 MiB" : "unreadable" } };
  if (ctx.changed(info.ctimeMs)) {
    const unsafe = parsed.entries.filter((e) => !isSafeGitEntry(e));
    if (!unsafe.length && !parsed.error) return;
    const problems = unsafe.map(entryName);
    if (parsed.error) problems.push(`line ${parsed.error.line}: ${parsed.error.message}`);
    const why = [...new Set(unsafe.flatMap((e) => dangerClassesOf(e).map((c) => c.why)))];
    if (parsed.error) why.push("a line git and Coop might read differently");
    rewrite(ctx, dir, name, parsed.entries.filter(isSafeGitEntry), problems, why);
    return;
  }
  if (parsed.error) return; // the owner's file, which git refuses itself
  const implicated = parsed.entries.filter((e) =>
    leadsToChange(ctx, e, dir.path, repo, inspectHooks, depth)
  );
  if (implicated.length) {
    rewrite(
      ctx,
      dir,
      name,
      parsed.entries.filter((e) => !implicated.includes(e)),
      implicated.map(entryName),
      ["it makes git run or read a file this call changed"],
    );
  }
}

/** A symlinked config: git would read, and write through, whatever it points at. */
function inspectLinkedConfig(ctx: ScanContext, dir: DirHandle, name: string, ctimeMs: number) {
  const trace = tracePath(dir.readLink(name), dir.path);
  if (!ctx.changed(ctimeMs) && !ctx.viaChangedLink(trace) && !targetChanged(ctx, trace)) return;
  const path = `${dir.path}/${name}`;
  if (!ctx.neutralise) return ctx.finding(path, `git config is a symbolic link`, ctimeMs);
  const keptAs = `${dir.path}/${dir.setAside(name)}`;
  ctx.neutralised({
    path,
    keptAs,
    kind: "config",
    keys: ["(symbolic link)"],
    reason: "a config that is a symbolic link makes git read and write another file",
  });
}

function targetChanged(ctx: ScanContext, trace: PathTrace): boolean {
  if (!trace.exists || !ctx.inside(trace.real)) return false;
  return ctx.changed(ctx.rootDir.lstat(relative(ctx.root, trace.real) || ".")?.ctimeMs ?? 0);
}

/**
 * For an entry of an unchanged config: whether it makes git run or read something that changed
 * (an include is followed and checked as a config itself; a hooks path, as hooks).
 */
function leadsToChange(
  ctx: ScanContext,
  entry: GitConfigEntry,
  configDir: string,
  repo: RepoPaths,
  inspectHooks: HooksInspector,
  depth: number,
): boolean {
  const value = entry.value;
  if (value === null || isSafeGitEntry(entry)) return false;
  const isInclude = (entry.section === "include" || entry.section === "includeif") &&
    entry.key === "path";
  if (isInclude || entryName(entry) === "core.hookspath") {
    if (value.startsWith("~")) return false; // the owner's home: not the sandbox's to change
    const trace = tracePath(value, isInclude ? configDir : repo.top);
    if (ctx.viaChangedLink(trace)) return true;
    if (!trace.exists || !ctx.inside(trace.real)) return false;
    if (isInclude && depth < MAX_INCLUDE_DEPTH) {
      ctx.withDir(
        dirname(trace.real),
        (dir) =>
          inspectConfig(
            ctx,
            dir,
            trace.real.slice(dir.path.length + 1),
            repo,
            inspectHooks,
            depth + 1,
          ),
      );
    } else if (!isInclude) {
      ctx.withDir(trace.real, (dir) => inspectHooks(ctx, dir));
    }
    return false;
  }
  // A program named by path (`core.fsmonitor = tools/watch.sh`, `alias.x = !./run.sh`).
  const paths = value.split(/[\s"'!]+/).filter((t) =>
    t.includes("/") && !t.startsWith("~") && !/^[a-z][a-z0-9+.-]*:/i.test(t)
  );
  return paths.some((token) =>
    [repo.top, repo.gitDir].some((base) => {
      const trace = tracePath(token, base);
      return ctx.viaChangedLink(trace) || targetChanged(ctx, trace);
    })
  );
}

/** Rewrites `name` with `kept` only, setting the original aside; in report mode, only tells. */
function rewrite(
  ctx: ScanContext,
  dir: DirHandle,
  name: string,
  kept: GitConfigEntry[],
  removed: string[],
  why: string[],
): void {
  const path = `${dir.path}/${name}`;
  const keys = [...new Set(removed)];
  if (!ctx.neutralise) {
    return ctx.finding(path, `git config sets ${keys.join(", ")}`, dir.lstat(name)?.ctimeMs ?? 0);
  }
  let bytes = serializeGitConfig(kept);
  // Our own output must read back as exactly what we meant; if not, keep nothing.
  const back = parseGitConfig(bytes);
  const same = !back.error && back.entries.length === kept.length &&
    back.entries.every((e, i) => entryName(e) === entryName(kept[i]) && e.value === kept[i].value);
  if (!same) bytes = new Uint8Array();
  try {
    const keptAs = `${dir.path}/${dir.setAside(name)}`;
    dir.createFile(name, bytes);
    ctx.neutralised({ path, keptAs, kind: "config", keys, reason: why.join("; ") });
  } catch (error) {
    ctx.unverified(`could not rewrite ${path}: ${errnoCode(error) ?? String(error)}`);
  }
}
