/**
 * `coop sandbox ps [--json] [--config FILE]` and `coop sandbox stop ID [--config FILE]`: the
 * gateway's live session sandboxes (`lifetime = "session"`), read from the files it keeps
 * under `<state_dir>/sandboxes/` (src/tools/live_sandbox_files.ts); and the live-sessions part
 * of `coop sandbox status`. Stopping one asks its init to end it (`COOP_SIG_END`: it kills and
 * reaps every process, so their CPU time is charged), then SIGKILL if it has not gone — each
 * through a pidfd, only while the pid is still that init (`signalIfSame`); the gateway notices,
 * charges and scans (src/tools/session_sandboxes.ts) and forgets it.
 * @module
 */
import { loadConfig } from "../config/config.ts";
import { ConfigError, formatDiagnostic } from "../config/config_diagnostic.ts";
import {
  listLiveSandboxes,
  type LiveSandbox,
  processStartTime,
  removeLiveSandbox,
} from "../tools/live_sandbox_files.ts";
import { END_SIGNAL } from "../sandbox/protocol.ts";
import { loadTrampoline, type Trampoline } from "../sandbox/ffi.ts";
import { signalIfSame } from "../sandbox/pid_signal.ts";
import { signalNumber } from "../sandbox/wait_status.ts";
import { errorMessage } from "../errors/coop_error.ts";
import { parseStateArgs } from "./owner_state.ts";
import { writeStderr } from "./stderr.ts";
import { UsageError } from "./usage_error.ts";

const STOP_WAIT_MS = 5000;
/** How long the init may take to kill and reap its processes before SIGKILL ends it. */
const END_GRACE_MS = 2000;

async function stateDirOf(file: string): Promise<string | null> {
  try {
    return (await loadConfig(file)).agent.stateDir;
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const d of error.diagnostics) writeStderr(`error: ${formatDiagnostic(file, d)}\n`);
    return null;
  }
}

function age(startedAt: string): string {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(startedAt)) / 1000));
  if (seconds < 120) return `${seconds}s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)}m`;
  return `${Math.round(seconds / 3600)}h`;
}

function mebibytes(bytes: number): string {
  return `${(bytes / 2 ** 20).toFixed(1)} MiB`;
}

/** The table `coop sandbox ps` prints (and `coop sandbox status` under "live sessions"). */
export function renderLiveSandboxes(live: readonly LiveSandbox[]): string {
  if (live.length === 0) return "no live session sandboxes\n";
  const rows = [["ID", "USER", "SESSION", "AGE", "PROCESSES", "MEMORY"]];
  for (const s of live) {
    rows.push([
      s.id,
      s.user,
      s.session,
      age(s.startedAt),
      String(s.processes),
      mebibytes(s.memoryBytes),
    ]);
  }
  const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => r[i].length)));
  return rows.map((r) => r.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd()).join("\n") +
    "\n";
}

/** `coop sandbox ps [--json] [--config FILE]`. */
export async function psCommand(args: string[]): Promise<number> {
  const parsed = parseStateArgs(args);
  if (parsed.positionals.length > 0) throw new UsageError("sandbox ps takes no arguments");
  const stateDir = await stateDirOf(parsed.config);
  if (stateDir === null) return 1;
  const live = listLiveSandboxes(stateDir);
  console.log(parsed.json ? JSON.stringify(live, null, 2) : renderLiveSandboxes(live).trimEnd());
  return 0;
}

/** `coop sandbox stop ID [--config FILE]`: kills that live session sandbox. */
export async function stopCommand(args: string[]): Promise<number> {
  const parsed = parseStateArgs(args);
  const [id, ...extra] = parsed.positionals;
  if (!id || extra.length > 0) {
    throw new UsageError("sandbox stop needs one ID (see coop sandbox ps)");
  }
  const stateDir = await stateDirOf(parsed.config);
  if (stateDir === null) return 1;
  const target = listLiveSandboxes(stateDir).find((s) => s.id === id);
  if (!target) {
    writeStderr(`coop: no live session sandbox "${id}" (coop sandbox ps lists them)\n`);
    return 1;
  }
  let lib: Trampoline;
  try {
    lib = await loadTrampoline();
  } catch (error) {
    writeStderr(`coop: cannot stop ${id}: ${errorMessage(error)}\n`);
    return 1;
  }
  // The start time again, with a pidfd open, before each signal: never one to a process that
  // reused the pid.
  const same = () => processStartTime(target.pid) === target.pidStart;
  const signal = (number: number) => signalIfSame(lib, target.pid, same, number);
  const gone = async (ms: number) => {
    const until = Date.now() + ms;
    while (same() && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    return !same();
  };
  signal(END_SIGNAL);
  if (!await gone(END_GRACE_MS)) signal(signalNumber("SIGKILL"));
  await gone(STOP_WAIT_MS);
  if (processStartTime(target.pid) === target.pidStart) {
    writeStderr(`coop: session sandbox ${id} (pid ${target.pid}) did not end\n`);
    return 1;
  }
  removeLiveSandbox(stateDir, id);
  console.log(`stopped session sandbox ${id} (${target.user}, ${target.session})`);
  return 0;
}

/**
 * The live sessions of the config at `file` for `coop sandbox status`, or null when there is no
 * loadable config there (status also works without one).
 */
export async function liveSessionsForStatus(file: string): Promise<LiveSandbox[] | null> {
  try {
    return listLiveSandboxes((await loadConfig(file)).agent.stateDir);
  } catch {
    return null;
  }
}
