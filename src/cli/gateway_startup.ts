/**
 * What `coop start` and `coop chat` do before serving: load and check the config (errors stop
 * here, with file and key), measure the sandbox for the banner, open the state database.
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import { sandboxBanner } from "./banner.ts";
import { type CoopConfig, loadConfig } from "../config/config.ts";
import { autoexecInSandboxWorkspaces, autoexecWarning } from "../workspace/autoexec_files.ts";
import { diagnoseConfig } from "./config_diagnostics.ts";
import { ConfigError, formatDiagnostic } from "../config/config_diagnostic.ts";
import { Gateway, type GatewayDependencies } from "../gateway/gateway.ts";
import { lockStateDir, type StateLock, StateLockedError } from "../state/state_lock.ts";
import { openStateDb } from "../state/state_db.ts";
import { cgroupHostWithDelegation, probe, type ProbeReport } from "../sandbox/mod.ts";
import { callerPath } from "./caller_path.ts";
import { DEFAULT_CONFIG_FILE } from "./check_command.ts";
import { writeStderr } from "./stderr.ts";

/** A gateway ready to serve, and the measured sandbox line to show. */
export interface StartedGateway {
  config: CoopConfig;
  gateway: Gateway;
  /** The gateway's state database (the messenger channels keep their inbox there). */
  db: DatabaseSync;
  /** The startup banner's sandbox line (measured by a probe sandbox). */
  banner: string;
  /** The state directory's gateway lock, when asked for; release it after `gateway.close()`. */
  lock?: StateLock;
}

/** What startup does beyond opening the gateway. */
export interface StartupOptions {
  /** Take the state directory's gateway lock (`coop start`): one gateway per directory. */
  lockStateDir?: boolean;
}

/** What startup may be given instead of the real world (tests). */
export interface StartupDependencies extends GatewayDependencies {
  /** Measures the sandbox; default: a real probe sandbox. */
  probe?: () => Promise<ProbeReport>;
  /** Where diagnostics go; default stderr. */
  writeError?: (text: string) => void;
}

/** Parses `[--config FILE]`, the only option of `start` and `chat`: the absolute path. */
export function parseConfigOption(args: string[]): string {
  const { values } = parseArgs({
    args,
    options: { config: { type: "string", default: DEFAULT_CONFIG_FILE } },
    allowPositionals: false,
  });
  return callerPath(values.config ?? DEFAULT_CONFIG_FILE);
}

/**
 * Loads, checks and opens everything; returns the exit status instead when the config has
 * errors or the state database cannot be opened (each reported with its file and key).
 */
export async function startGateway(
  file: string,
  deps: StartupDependencies = {},
  options: StartupOptions = {},
): Promise<StartedGateway | number> {
  const write = deps.writeError ?? writeStderr;
  let config: CoopConfig;
  try {
    config = await loadConfig(file);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const d of error.diagnostics) write(`error: ${formatDiagnostic(file, d)}\n`);
    write(
      `coop: ${file} has errors; nothing was started (check it with: coop check --config ${file})\n`,
    );
    return 1;
  }
  const diagnostics = diagnoseConfig(config);
  for (const d of diagnostics) write(`${d.severity}: ${formatDiagnostic(file, d)}\n`);
  if (diagnostics.some((d) => d.severity === "error")) {
    write(`coop: ${file} has errors; nothing was started\n`);
    return 1;
  }
  let lock: StateLock | undefined;
  if (options.lockStateDir) {
    try {
      lock = lockStateDir(config.agent.stateDir);
    } catch (error) {
      write(`coop: ${lockFailure(error, config.agent.stateDir)}\n`);
      return 1;
    }
  }
  for (const f of await autoexecInSandboxWorkspaces(config)) write(`${autoexecWarning(f)}\n`);
  // Not root and not a Delegate=yes service: ask the user's systemd for a cgroup (limits.md).
  if (config.sandbox.enabled) await cgroupHostWithDelegation();
  // Measured, never assumed; not measured at all when the sandbox is off (nothing would use it).
  const report = config.sandbox.enabled ? await (deps.probe ?? probe)() : null;
  const banner = sandboxBanner(report, config.sandbox.enabled);
  let gateway: Gateway;
  let db: DatabaseSync;
  try {
    db = deps.db ?? openStateDb(config.agent.stateDir);
    gateway = Gateway.open(config, { ...deps, db });
  } catch (error) {
    lock?.release();
    if (!(error instanceof CoopError)) throw error;
    write(`coop: cannot open the state database in ${config.agent.stateDir}: ${error.message}\n`);
    return 1;
  }
  return { config, gateway, db, banner, ...(lock ? { lock } : {}) };
}

function lockFailure(error: unknown, stateDir: string): string {
  if (error instanceof StateLockedError) return error.message;
  return `cannot lock the state directory ${stateDir}: ${errorMessage(error)}`;
}
