/**
 * After every non-owner call that can write (ATTACKS F23, F27, R12): scan what the call changed
 * in the workspace (on the event loop while it is small, else on a worker); neutralise what git would obey on the host; tell the
 * owner (log), the user and the model (the tool result) what was disabled and why.
 *
 * A scan that could not see everything (too many entries, unreadable directories) keeps its
 * start time: the next scan of that workspace looks at everything changed since then, so a trap
 * planted behind a scan's limit is still found once the workspace is small enough again.
 *
 * A live session sandbox (`lifetime = "session"`) keeps processes running between calls: one
 * could write a trap after a call's scan and before the next call starts, older than that
 * call's start. So once a session's call has scanned a workspace, every later scan of it covers
 * all since the previous scan started, and one more runs when the session sandbox ends.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { relative } from "node:path";
import { errorMessage } from "../errors/coop_error.ts";
import { WORKSPACE_MOUNT as SANDBOX_WORKSPACE_MOUNT } from "../sandbox/environment.ts";
import type { AutoexecFile, GitNeutralised } from "./scan_context.ts";
import { scanWorkspaceBounded, warmScanWorkers } from "./workspace_scan.ts";

const log = getLogger(["coop", "executor"]);

/** What the scan after one call found, for the tool call's outcome. */
export interface AfterCallFindings {
  /** Auto-run files (not git's) the call wrote, not reported before. */
  autoexec: AutoexecFile[];
  /** What was made harmless. */
  gitNeutralised: GitNeutralised[];
  /** Why the workspace could not be fully verified; empty when it was. */
  unverified: string[];
  /** A line for the model and the user, or null when there is nothing to say. */
  note: string | null;
}

/** How one scan after a call is done. */
export interface AfterCallOptions {
  /** `sandbox.workspace_scan_limit`: entries a scan reads at most. */
  maxEntries: number;
  /** The call ran in a live session sandbox (or the session ended): chain the scans. */
  session?: boolean;
}

/** Scans after calls and remembers what it reported and which workspaces are unverified. */
export class WorkspaceGuard {
  /** Auto-run files reported already, by path, with the change reported (no repeats). */
  readonly #reported = new Map<string, number>();
  /** Workspaces whose last scan was incomplete, with the start of the window it covered. */
  readonly #unverifiedSince = new Map<string, number>();
  /** Workspaces a session sandbox wrote, with when their latest scan started. */
  readonly #chainedFrom = new Map<string, number>();
  /** The scan running per workspace: two calls of one user end together, scans take turns. */
  readonly #running = new Map<string, Promise<unknown>>();
  /** The scan workers, started in the background at the first scan (see `warmScanWorkers`). */
  #warming: Promise<void> | undefined;

  /**
   * Scans `workspace` for what changed since `started` (earlier if a scan was incomplete, or
   * since the previous scan began for a workspace a session sandbox wrote).
   */
  afterCall(
    principal: string,
    workspace: string,
    started: number,
    { maxEntries, session = false }: AfterCallOptions,
  ): Promise<AfterCallFindings> {
    this.#warming ??= warmScanWorkers().catch((error) => {
      log.warn("workspace.scan_workers {error}", { error: errorMessage(error) });
    });
    const previous = this.#running.get(workspace) ?? Promise.resolve();
    const next = previous.then(() => {
      // Never forgotten: processes of another session on this workspace may still run.
      if (session && !this.#chainedFrom.has(workspace)) this.#chainedFrom.set(workspace, started);
      return this.#scan(principal, workspace, started, maxEntries);
    });
    const settled = next.catch(() => {});
    this.#running.set(workspace, settled);
    void settled.then(() => {
      if (this.#running.get(workspace) === settled) this.#running.delete(workspace);
    });
    return next;
  }

  async #scan(
    principal: string,
    workspace: string,
    started: number,
    maxEntries: number,
  ): Promise<AfterCallFindings> {
    const scanStarted = Date.now();
    const since = Math.min(
      started,
      this.#chainedFrom.get(workspace) ?? started,
      this.#unverifiedSince.get(workspace) ?? started,
    );
    // What is written while this scan runs is the next scan's.
    if (this.#chainedFrom.has(workspace)) this.#chainedFrom.set(workspace, scanStarted);
    let report;
    try {
      report = await scanWorkspaceBounded(workspace, { since, neutralise: true, maxEntries });
    } catch (error) {
      report = null;
      log.error("workspace.scan_failed {workspace}: {error}", {
        event: "workspace.scan_failed",
        principal,
        workspace,
        error: errorMessage(error),
      });
    }
    const unverified = report ? report.problems : ["the scan failed (see the gateway's log)"];
    if (report?.complete) this.#unverifiedSince.delete(workspace);
    else this.#unverifiedSince.set(workspace, since);
    const neutralised = report?.neutralised ?? [];
    for (const n of neutralised) {
      log.warn(
        "workspace.git_neutralised {principal} left {path} ({keys}), which git would obey as " +
          "you on the host: {reason}; disabled, the original kept as {keptAs}",
        { event: "workspace.git_neutralised", principal, ...n },
      );
    }
    if (unverified.length) {
      log.warn(
        "workspace.scan_incomplete {workspace} could not be fully checked after a call of " +
          "{principal}: {problems}; until a scan completes, treat repositories and auto-run " +
          "files there as untrusted",
        { event: "workspace.scan_incomplete", principal, workspace, problems: unverified },
      );
    }
    const autoexec = (report?.findings ?? []).filter((f) =>
      this.#reported.get(f.path) !== f.changedAt
    );
    for (const file of autoexec) {
      this.#reported.set(file.path, file.changedAt);
      log.warn(
        "workspace.autoexec_written {principal} wrote {path}: {what}, which runs as you when " +
          "you use that tool there on the host; read it first",
        { event: "workspace.autoexec_written", principal, ...file },
      );
    }
    return {
      autoexec,
      gitNeutralised: neutralised,
      unverified,
      note: noteFor(report?.workspace ?? workspace, neutralised, unverified),
    };
  }
}

/** What the model (and through it the user) is told. */
function noteFor(workspace: string, neutralised: GitNeutralised[], unverified: string[]) {
  const lines: string[] = [];
  const inside = (path: string) => `${SANDBOX_WORKSPACE_MOUNT}/${relative(workspace, path)}`;
  if (neutralised.length) {
    const items = neutralised.map((n) =>
      `${inside(n.path)} (${n.kind === "config" ? n.keys.join(", ") : n.kind}: ${n.reason})`
    );
    lines.push(
      `[coop] Disabled git settings this command left, which would run programs or redirect ` +
        `git on the owner's machine: ${items.join("; ")}. The originals are kept beside them ` +
        `as *.coop-disabled; the owner was told.`,
    );
  }
  if (unverified.length) {
    lines.push(
      `[coop] The workspace could not be fully checked for git traps after this command ` +
        `(${unverified.join("; ")}); the owner was told.`,
    );
  }
  return lines.length ? lines.join("\n") : null;
}
