/**
 * Whether other local users can get into the workspace: `coop check` and `coop start` warn
 * about each directory that lets them. Coop creates workspace directories 0700; it never
 * changes the mode of a directory that already exists (it may be the owner's on purpose).
 * @module
 */
import { dirname } from "node:path";
import type { CoopConfig } from "./config.ts";
import type { ConfigDiagnostic } from "./config_diagnostic.ts";
import { userScopeDirectory } from "./user_directories.ts";

/** The mode Coop creates workspace directories with: the gateway's user only. */
export const WORKSPACE_DIR_MODE = 0o700;

const OTHERS_TRAVERSE = 0o001;
const OTHERS_WRITE = 0o002;
const GROUP_OR_OTHERS_READ_OR_TRAVERSE = 0o055;
const STICKY = 0o1000;

/** The permission bits of a directory, or null when it does not exist (or cannot be seen). */
export type ModeOf = (path: string) => number | null;

/** One way into a workspace directory for other local users. */
export interface WorkspaceAccessProblem {
  /** `workspace.open` (the directory itself) or `workspace.ancestor_writable`. */
  code: "workspace.open" | "workspace.ancestor_writable";
  /** The directory at fault. */
  path: string;
  /** What it allows and how to close it. */
  message: string;
}

function hostMode(path: string): number | null {
  try {
    return Deno.statSync(path).mode! & 0o7777;
  } catch {
    // Missing, or not even stat-able by the gateway's user: nothing to report about it.
    return null;
  }
}

/** `path` with its existing part's symlinks resolved (the modes that count are the targets'). */
function resolved(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    const parent = dirname(path);
    if (parent === path) return path;
    const name = path.slice(parent.length).replace(/^\/+/, "");
    const base = resolved(parent);
    return base === "/" ? `/${name}` : `${base}/${name}`;
  }
}

/** The directories above `path`, from `/` down to its parent. */
function ancestors(path: string): string[] {
  const out: string[] = [];
  for (let dir = dirname(path);; dir = dirname(dir)) {
    out.unshift(dir);
    if (dir === dirname(dir)) return out;
  }
}

function octal(mode: number): string {
  return `0${mode.toString(8).padStart(3, "0")}`;
}

/**
 * The ways other local users can get into `dirs`: a directory readable or traversable by its
 * group or others while every directory above it lets others through, and any directory above
 * one that others may write without the sticky bit (they could put their own in its place).
 * Each directory is named once.
 *
 * @example
 * ```ts
 * workspaceAccessProblems(["/srv/coop/ws"]); // [] when /srv/coop/ws is 0700
 * ```
 */
export function workspaceAccessProblems(
  dirs: readonly string[],
  modeOf: ModeOf = hostMode,
): WorkspaceAccessProblem[] {
  const problems = new Map<string, WorkspaceAccessProblem>();
  for (const configured of dirs) {
    const dir = resolved(configured);
    const above = ancestors(dir).map((path) => ({ path, mode: modeOf(path) }));
    for (const { path, mode } of above) {
      if (mode === null || !(mode & OTHERS_WRITE) || mode & STICKY) continue;
      problems.set(path, {
        code: "workspace.ancestor_writable",
        path,
        message: `${path} (mode ${octal(mode)}) is writable by other local users and has no ` +
          `sticky bit: they can move ${dir} away and put a directory of their own in its place; ` +
          `run chmod o-w ${path}, or move the workspace`,
      });
    }
    const mode = modeOf(dir);
    if (mode === null || !(mode & GROUP_OR_OTHERS_READ_OR_TRAVERSE)) continue;
    if (!above.every((a) => a.mode !== null && a.mode & OTHERS_TRAVERSE)) continue;
    problems.set(dir, {
      code: "workspace.open",
      path: dir,
      message: `${dir} (mode ${octal(mode)}) lets other local users in, and every directory ` +
        "above it lets them through: they can read what the agent and sandboxed users keep " +
        `there; run chmod 700 ${dir} (Coop creates workspace directories 0700 but never ` +
        "changes an existing one)",
    });
  }
  return [...problems.values()];
}

/** The workspace root and every non-owner's directory in it (the shared one included). */
export function workspaceDirectories(config: CoopConfig): string[] {
  const users = config.users.filter((u) => u.trust !== "owner").map((u) => u.name);
  const scoped = [...users, null].map((user) => userScopeDirectory(config, user));
  return [...new Set([config.agent.workspace, ...scoped])];
}

/** Adds a warning for each way other local users can get into the workspace. */
export function checkWorkspaceAccess(config: CoopConfig, out: ConfigDiagnostic[]): void {
  // `workspace = "/"` has its own warning (config.workspace_root); "/ lets others in" adds noise.
  if (config.agent.workspace === "/") return;
  for (const problem of workspaceAccessProblems(workspaceDirectories(config))) {
    out.push({
      severity: "warning",
      code: `config.${problem.code}`,
      path: "agent.workspace",
      message: problem.message,
    });
  }
}
