/**
 * The files that make the gateway's live session sandboxes visible to other processes (`coop
 * sandbox ps`, `coop sandbox stop`, `coop sandbox status`): one small JSON file per live sandbox
 * under `<state_dir>/sandboxes/`, removed when it ends. A file whose init is gone — or whose pid
 * now belongs to another process (the start time differs) — is stale: ignored and removed.
 * @module
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { getLogger } from "@logtape/logtape";
import { errorMessage } from "../errors/coop_error.ts";
import { residentBytes } from "../sandbox/resident_memory.ts";

const log = getLogger(["coop", "tools", "session"]);

/** What one live session sandbox's file records. */
export interface LiveSandboxRecord {
  /** Short id `coop sandbox stop` takes. */
  id: string;
  /** Host pid of the sandbox's init. */
  pid: number;
  /** The init's start time (`/proc/<pid>/stat` field 22): tells a reused pid apart. */
  pidStart: string;
  /** The user the sandbox runs for. */
  user: string;
  /** The chat session (`channel:session`). */
  session: string;
  /** When the sandbox started (ISO time). */
  startedAt: string;
  /** The gateway process that owns it. */
  gatewayPid: number;
}

/** A live sandbox as `coop sandbox ps` shows it. */
export interface LiveSandbox extends LiveSandboxRecord {
  /** Processes in the sandbox, its init included. */
  processes: number;
  /** Resident memory of those processes, in bytes. */
  memoryBytes: number;
}

/** `<stateDir>/sandboxes`. */
export function liveSandboxDir(stateDir: string): string {
  return join(stateDir, "sandboxes");
}

/** Field 22 of `/proc/<pid>/stat` (start time in clock ticks), or null when pid is gone. */
export function processStartTime(pid: number): string | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    if (fields[0] === "Z" || fields[0] === "X") return null;
    return fields[19] ?? null;
  } catch {
    return null;
  }
}

/** Records a live sandbox (0600, in a 0700 directory). */
export function writeLiveSandbox(stateDir: string, record: LiveSandboxRecord): void {
  const dir = liveSandboxDir(stateDir);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  writeFileSync(join(dir, `${record.id}.json`), JSON.stringify(record), { mode: 0o600 });
}

/**
 * Lists a live sandbox for `coop sandbox ps` and `stop` (other processes). A state directory
 * that cannot take the file (full, read-only) leaves it unlisted and says so: never thrown into
 * the gateway's sandbox bookkeeping, where nothing could handle it.
 */
export function listLiveSandbox(stateDir: string, record: LiveSandboxRecord): void {
  try {
    writeLiveSandbox(stateDir, record);
  } catch (error) {
    log.warn("sandbox.session.unlisted {id}: coop sandbox ps will not show it: {error}", {
      id: record.id,
      user: record.user,
      error: errorMessage(error),
    });
  }
}

/** Removes a live sandbox's listing; one that cannot go is swept by the next `ps`. */
export function unlistLiveSandbox(stateDir: string, id: string): void {
  try {
    removeLiveSandbox(stateDir, id);
  } catch (error) {
    log.warn("sandbox.session.unlist_failed {id}: {error}", { id, error: errorMessage(error) });
  }
}

/** Removes a live sandbox's file (gone already: nothing to do). */
export function removeLiveSandbox(stateDir: string, id: string): void {
  rmSync(join(liveSandboxDir(stateDir), `${id}.json`), { force: true });
}

/** The pids of a process and all its descendants (through `/proc/<pid>/task/*\/children`). */
function processTree(pid: number): number[] {
  const found: number[] = [];
  const queue = [pid];
  while (queue.length > 0 && found.length < 100_000) {
    const next = queue.shift()!;
    found.push(next);
    let tasks: string[] = [];
    try {
      tasks = readdirSync(`/proc/${next}/task`);
    } catch {
      continue;
    }
    for (const task of tasks) {
      try {
        const children = readFileSync(`/proc/${next}/task/${task}/children`, "utf8");
        for (const child of children.trim().split(/\s+/)) if (child) queue.push(Number(child));
      } catch { /* exited meanwhile */ }
    }
  }
  return found;
}

/** The live sandboxes recorded under `stateDir`; stale files are removed on the way. */
export function listLiveSandboxes(stateDir: string): LiveSandbox[] {
  let names: string[];
  try {
    names = readdirSync(liveSandboxDir(stateDir)).filter((n) => n.endsWith(".json"));
  } catch {
    return [];
  }
  const live: LiveSandbox[] = [];
  for (const name of names) {
    let record: LiveSandboxRecord;
    try {
      record = JSON.parse(readFileSync(join(liveSandboxDir(stateDir), name), "utf8"));
    } catch {
      continue; // being written or removed right now
    }
    if (processStartTime(record.pid) !== record.pidStart) {
      removeLiveSandbox(stateDir, name.slice(0, -".json".length));
      continue;
    }
    const tree = processTree(record.pid);
    const memoryBytes = tree.reduce((sum, pid) => sum + (residentBytes(pid) ?? 0), 0);
    live.push({ ...record, processes: tree.length, memoryBytes });
  }
  return live.sort((a, b) => a.startedAt.localeCompare(b.startedAt));
}
