/**
 * One repository in a sandbox's workspace, made harmless for the owner (ATTACKS F23, F27): its
 * config files (`git_config_guard.ts`), its hooks, and the pointers by which git reads or writes
 * somewhere else — a `.git` file or symlink, `commondir`, a worktree's `gitdir`,
 * `objects/info/alternates`, a symlink inside the git directory. What changed during the call
 * and would run a program or lead outside the workspace is set aside as `….coop-disabled`;
 * what the owner made before is left alone unless the call changed what it leads to.
 * @module
 */
import { basename, dirname, relative } from "node:path";
import { type DirEntry, type DirHandle, DISABLED_SUFFIX, errnoCode } from "./dir_handle.ts";
import { inspectConfig, type RepoPaths } from "./git_config_guard.ts";
import { tracePath } from "./path_trace.ts";
import { type GitNeutralised, type ScanContext, ScanStop } from "./scan_context.ts";

/** Names at the top of a git directory that `inspectGitDir` handles itself. */
export const HANDLED_IN_GIT_DIR = new Set(["config", "config.worktree", "hooks"]);

/** git's own test (`is_git_directory`): HEAD, and objects and refs or a `commondir`. */
export function looksLikeGitDir(kinds: ReadonlyMap<string, DirEntry["kind"]>): boolean {
  const is = (name: string, ...k: DirEntry["kind"][]) => k.includes(kinds.get(name)!);
  return is("HEAD", "file", "symlink") &&
    (is("commondir", "file") || (is("objects", "dir", "symlink") && is("refs", "dir", "symlink")));
}

/** Checks a git directory: config files, hooks, pointer files. */
export function inspectGitDir(ctx: ScanContext, dir: DirHandle, names: ReadonlySet<string>) {
  const repo: RepoPaths = {
    gitDir: dir.path,
    top: basename(dir.path) === ".git" ? dirname(dir.path) : dir.path,
  };
  for (const name of ["config", "config.worktree"]) {
    if (names.has(name)) {
      guard(ctx, dir.path, () => inspectConfig(ctx, dir, name, repo, inspectHooks));
    }
  }
  if (names.has("hooks")) guard(ctx, dir.path, () => inspectHooksEntry(ctx, dir));
  for (const name of ["commondir", "gitdir"]) {
    if (names.has(name)) guard(ctx, dir.path, () => inspectPointerFile(ctx, dir, name));
  }
  if (names.has("objects")) guard(ctx, dir.path, () => inspectAlternates(ctx, dir));
  if (!ctx.neutralise) reportSetAside(ctx, dir, names);
}

/** A `.git` that is a file (`gitdir: …`) or a symlink, in a working tree. */
export function inspectDotGit(ctx: ScanContext, dir: DirHandle, kind: DirEntry["kind"]): void {
  guard(ctx, dir.path, () => {
    if (kind === "symlink") return inspectLink(ctx, dir, ".git");
    if (kind === "file") inspectPointerFile(ctx, dir, ".git");
  });
}

/** A symlink inside a git directory (e.g. `objects` → another repository's objects). */
export function inspectGitSymlink(ctx: ScanContext, dir: DirHandle, name: string): void {
  guard(ctx, dir.path, () => inspectLink(ctx, dir, name));
}

/**
 * The hooks in a hooks directory: one that changed and is executable, or is a symlink, is set
 * aside and made non-executable (git runs a hook only by its exact name, executable).
 */
export function inspectHooks(ctx: ScanContext, hooks: DirHandle): void {
  const entries = ctx.list(hooks);
  ctx.count(entries.length);
  for (const { name, kind } of entries) {
    const path = `${hooks.path}/${name}`;
    if (name.includes(DISABLED_SUFFIX)) {
      if (!ctx.neutralise) ctx.finding(path, setAsideText("git hook"), 0);
      continue;
    }
    if (name.endsWith(".sample") || (kind !== "file" && kind !== "symlink")) continue;
    const info = hooks.lstat(name);
    if (!info) continue;
    let changed = ctx.changed(info.ctimeMs);
    if (kind === "symlink") {
      const trace = tracePath(hooks.readLink(name), hooks.path);
      const target = trace.exists && ctx.inside(trace.real)
        ? ctx.rootDir.lstat(relative(ctx.root, trace.real))
        : null;
      changed ||= ctx.viaChangedLink(trace) || (target !== null && ctx.changed(target.ctimeMs));
    } else if ((info.mode & 0o111) === 0) {
      continue; // git ignores a hook that is not executable; making it so changes its ctime
    }
    if (!changed) continue;
    if (!ctx.neutralise) {
      ctx.finding(path, `git hook "${name}"`, info.ctimeMs);
      continue;
    }
    const aside = hooks.setAside(name);
    if (kind === "file") hooks.clearExecutable(aside);
    record(ctx, hooks, name, aside, "hook", [name], "a git hook runs whenever git reaches it");
  }
}

/** The `hooks` entry of a git directory: a directory of hooks, or a symlink to one. */
function inspectHooksEntry(ctx: ScanContext, dir: DirHandle): void {
  const info = dir.lstat("hooks");
  if (info?.isDirectory()) {
    const hooks = dir.openDir("hooks");
    if (!hooks) return;
    try {
      inspectHooks(ctx, hooks);
    } finally {
      hooks.close();
    }
  } else if (info?.isSymbolicLink()) {
    const trace = tracePath(dir.readLink("hooks"), dir.path);
    if (ctx.changed(info.ctimeMs) || ctx.viaChangedLink(trace)) {
      const why = `git would run hooks from wherever it points (${trace.real})`;
      return setAside(ctx, dir, "hooks", ["hooks (symbolic link)"], why);
    }
    if (trace.exists && ctx.inside(trace.real)) {
      ctx.withDir(trace.real, (h) => inspectHooks(ctx, h));
    }
  }
}

/** A file naming another path git follows: `.git` (`gitdir: X`), `commondir`, `gitdir`. */
function inspectPointerFile(ctx: ScanContext, dir: DirHandle, name: string): void {
  const info = dir.lstat(name);
  if (!info?.isFile()) return;
  let bytes: Uint8Array | "too-large" | null = null;
  try {
    bytes = dir.readFile(name, 64 * 1024);
  } catch {
    // unreadable (a mode the user set): judged as a pointer we cannot read
  }
  let target: string | null = null;
  if (bytes instanceof Uint8Array) {
    const text = new TextDecoder().decode(bytes);
    target = name === ".git"
      ? (/^gitdir: (.*)/.exec(text)?.[1] ?? "").trimEnd() || null
      : text.replace(/[\r\n]+$/, "") || null;
    if (name === ".git" && !text.startsWith("gitdir: ")) return; // git refuses it itself
  }
  judgePointer(ctx, dir, name, target, ctx.changed(info.ctimeMs), `${name} file`);
}

/** A symlink git follows. */
function inspectLink(ctx: ScanContext, dir: DirHandle, name: string): void {
  const info = dir.lstat(name);
  if (!info?.isSymbolicLink()) return;
  judgePointer(ctx, dir, name, dir.readLink(name), ctx.changed(info.ctimeMs), "symbolic link");
}

/** `objects/info/alternates`: object directories git reads (and `git repack -a` copies in). */
function inspectAlternates(ctx: ScanContext, dir: DirHandle): void {
  ctx.withDir(`${dir.path}/objects/info`, (info) => {
    const stat = info.lstat("alternates");
    if (!stat?.isFile()) return;
    const bytes = info.readFile("alternates", 1 << 20);
    const lines = bytes instanceof Uint8Array
      ? new TextDecoder().decode(bytes).split("\n").filter((l) => l.trim() && !l.startsWith("#"))
      : [null];
    const base = dirname(info.path); // relative entries are relative to the objects directory
    for (const line of lines) {
      // A quoted line is C-style escaped; we do not unquote it: judged as unknown.
      const target = line === null || line.startsWith('"') ? null : line;
      if (
        judgePointer(ctx, info, "alternates", target, ctx.changed(stat.ctimeMs), "alternates", base)
      ) {
        return;
      }
    }
  });
}

/**
 * Sets aside a pointer that leads outside the workspace (or nowhere we can tell) when it, or a
 * symlink on its way, changed in the window. Returns whether it did.
 */
function judgePointer(
  ctx: ScanContext,
  dir: DirHandle,
  name: string,
  target: string | null,
  changed: boolean,
  what: string,
  base = dir.path,
): boolean {
  if (target === null) {
    if (!changed) return false;
    setAside(ctx, dir, name, [what], "a pointer Coop cannot read");
    return true;
  }
  const home = target.startsWith("~");
  const trace = home ? null : tracePath(target, base);
  if (!changed && !(trace && ctx.viaChangedLink(trace))) return false;
  if (trace && !trace.unresolved && ctx.inside(trace.real)) return false;
  const where = trace?.real ?? target;
  setAside(ctx, dir, name, [what], `it makes git read or write outside the workspace (${where})`);
  return true;
}

function setAside(ctx: ScanContext, dir: DirHandle, name: string, keys: string[], why: string) {
  const path = `${dir.path}/${name}`;
  if (!ctx.neutralise) return ctx.finding(path, `git: ${why}`, dir.lstat(name)?.ctimeMs ?? 0);
  record(ctx, dir, name, dir.setAside(name), "pointer", keys, why);
}

function record(
  ctx: ScanContext,
  dir: DirHandle,
  name: string,
  aside: string,
  kind: GitNeutralised["kind"],
  keys: string[],
  reason: string,
): void {
  ctx.neutralised({
    path: `${dir.path}/${name}`,
    keptAs: `${dir.path}/${aside}`,
    kind,
    keys,
    reason,
  });
}

/** Report mode: what Coop set aside earlier, for `coop check`. */
function reportSetAside(ctx: ScanContext, dir: DirHandle, names: ReadonlySet<string>): void {
  for (const name of names) {
    if (name.includes(DISABLED_SUFFIX)) {
      ctx.finding(`${dir.path}/${name}`, setAsideText("git"), dir.lstat(name)?.ctimeMs ?? 0);
    }
  }
}

/** How `coop check` describes something Coop set aside. */
export function setAsideText(what: string): string {
  return `${what}: set aside by Coop after a sandboxed call (it would have run or redirected ` +
    `programs as you); read it before restoring, or delete it`;
}

/** Runs one check; a failure makes the scan incomplete instead of ending it. */
function guard(ctx: ScanContext, where: string, fn: () => void): void {
  try {
    fn();
  } catch (error) {
    if (error instanceof ScanStop) throw error; // the entry limit ends the whole scan
    ctx.unverified(`could not check ${where}: ${errnoCode(error) ?? String(error)}`);
  }
}
