/**
 * What the owner's state commands (`coop memory`, `coop usage`) share: their options, the
 * config, and the state database opened beside a running `coop start`. They take no gateway
 * lock: the database is in WAL mode, so a reader never blocks the gateway, and a write (`coop
 * memory rm`) waits for the gateway's commit in progress (`busy_timeout`). Who may run them is
 * decided by the file system: the state directory is 0700, like the config it belongs to.
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { type CoopConfig, loadConfig } from "../config/config.ts";
import { ConfigError, formatDiagnostic } from "../config/config_diagnostic.ts";
import { CoopError } from "../errors/coop_error.ts";
import { migrate, openStateDb, STATE_DB_FILE } from "../state/state_db.ts";
import { callerPath } from "./caller_path.ts";
import { DEFAULT_CONFIG_FILE } from "./check_command.ts";
import { UsageError } from "./usage_error.ts";
import { writeStderr } from "./stderr.ts";

/** A state command's parsed command line: the shared options, its own, its positionals. */
export interface StateCommandArgs {
  /** The absolute config file. */
  config: string;
  /** `--json`. */
  json: boolean;
  /** The other string options given, by name. */
  values: Record<string, string | undefined>;
  /** Positional arguments. */
  positionals: string[];
}

/** Parses `[--config FILE] [--json]` plus `strings` options; a mistake throws, and `main` prints it with the usage. */
export function parseStateArgs(
  args: readonly string[],
  strings: readonly string[] = [],
): StateCommandArgs {
  const options: Record<string, { type: "string" | "boolean" }> = {
    config: { type: "string" },
    json: { type: "boolean" },
  };
  for (const name of strings) options[name] = { type: "string" };
  const { values, positionals } = parseArgs({
    args: [...args],
    options,
    strict: true,
    allowPositionals: true,
  });
  for (const name of ["config", ...strings]) {
    if (values[name] === "") throw new UsageError(`--${name} needs a value`);
  }
  const rest: Record<string, string | undefined> = {};
  for (const name of strings) rest[name] = values[name] as string | undefined;
  return {
    config: callerPath((values.config as string | undefined) ?? DEFAULT_CONFIG_FILE),
    json: values.json === true,
    values: rest,
    positionals,
  };
}

/** The config and its state database, or null when either failed (reported on stderr). */
export interface OwnerState {
  config: CoopConfig;
  /** The open database; an empty in-memory one when the gateway has never run. */
  db: DatabaseSync;
}

/**
 * Loads `file` and opens its state database. A state directory with no database yet (the
 * gateway never ran) is not created: the commands then see an empty one. Returns null after
 * reporting the problem (config errors with file and key).
 */
export async function openOwnerState(file: string): Promise<OwnerState | null> {
  let config: CoopConfig;
  try {
    config = await loadConfig(file);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    for (const d of error.diagnostics) writeStderr(`error: ${formatDiagnostic(file, d)}\n`);
    return null;
  }
  const stateDir = config.agent.stateDir;
  try {
    if (isFile(join(stateDir, STATE_DB_FILE))) return { config, db: openStateDb(stateDir) };
    const empty = new DatabaseSync(":memory:");
    migrate(empty);
    return { config, db: empty };
  } catch (error) {
    if (!(error instanceof CoopError)) throw error;
    writeStderr(`coop: cannot open the state database in ${stateDir}: ${error.message}\n`);
    return null;
  }
}

function isFile(path: string): boolean {
  try {
    return Deno.statSync(path).isFile;
  } catch {
    return false;
  }
}
