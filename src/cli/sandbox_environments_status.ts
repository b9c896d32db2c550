/**
 * The environments part of `coop sandbox status [--config FILE]`, in text.
 * @module
 */
import { existsSync } from "node:fs";
import { type CoopConfig, loadConfig } from "../config/config.ts";
import { ConfigError } from "../config/config_diagnostic.ts";
import { environmentsStatus, type EnvironmentStatus } from "../environments/environment_status.ts";
import { sizeText } from "../environments/size_text.ts";
import { callerPath } from "./caller_path.ts";
import { DEFAULT_CONFIG_FILE } from "./check_command.ts";

/**
 * The environments of the config `--config` names (default `coop.toml` when it exists; none
 * without one), or the config's error as a one-line problem.
 */
export async function statusEnvironments(
  file: string | undefined,
): Promise<EnvironmentStatus[] | { problem: string } | null> {
  const path = callerPath(file ?? DEFAULT_CONFIG_FILE);
  if (file === undefined && !existsSync(path)) return null;
  let config: CoopConfig;
  try {
    config = await loadConfig(path);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return { problem: error.message };
  }
  return environmentsStatus(config);
}

/** The text section: one block per environment, one line per user. */
export function renderEnvironments(
  environments: EnvironmentStatus[] | { problem: string } | null,
): string {
  if (environments === null) return "";
  if ("problem" in environments) {
    return `environments: cannot read the config: ${environments.problem}\n`;
  }
  if (environments.length === 0) return "environments: none configured\n";
  const lines = ["environments:"];
  for (const e of environments) {
    lines.push(`  ${e.coopfile}  (${e.id}; used by ${e.usedBy.join(", ")})`);
    if (e.built) {
      const stale = e.stale ? " — Coopfile changed since: run `coop rebuild`" : "";
      lines.push(
        `    base: ${e.image}, ${sizeText(e.sizeBytes ?? 0)}, built ${e.builtAt}${stale}`,
      );
    } else {
      lines.push("    base: not built (run `coop init`)");
    }
    if (e.problem) lines.push(`    problem: ${e.problem.split("\n").join("; ")}`);
    for (const u of e.users) {
      const sessions = u.sessions ? `, ${u.sessions} session upper(s)` : "";
      lines.push(
        `    ${u.user}: upper ${sizeText(u.upperBytes, u.partial)}${sessions}, persist ${
          sizeText(u.persistBytes, u.partial)
        }`,
      );
    }
  }
  return lines.join("\n") + "\n";
}
