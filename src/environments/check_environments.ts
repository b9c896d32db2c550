/**
 * `coop check` for environments: every Coopfile the config references loads without error,
 * its base is built (and from this Coopfile), it is not set where it cannot apply, and its
 * build's IP-literal `[network] allow_domains` get the warnings coop.toml's do.
 * @module
 */
import type { CoopConfig } from "../config/config.ts";
import {
  type ConfigDiagnostic,
  ConfigError,
  configError,
  configWarning,
  formatDiagnostic,
} from "../config/config_diagnostic.ts";
import { allowEntryWarnings } from "../config/check_network.ts";
import { environmentReferences } from "./environment_lifecycle.ts";
import { loadEnvironment } from "./environment_state.ts";

/**
 * Loads each referenced Coopfile once: its errors come back under the key that references it
 * (naming the Coopfile, its key and who uses it); an unbuilt or outdated base is a warning.
 */
export function checkEnvironments(config: CoopConfig): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  const references = environmentReferences(config);
  const done = new Set<string>();
  for (const ref of references) {
    // A user's own setting, or a cron job's that runs as the owner: either way, the host.
    const cronUser = config.cron.find((job) => `cron job ${job.name}` === ref.who)?.user;
    const owner = config.users.find((u) =>
      (`user ${u.name}` === ref.who || u.name === cronUser) && u.trust === "owner"
    );
    if (owner) {
      out.push(configWarning(
        "config.environment_unused",
        ref.key,
        `has no effect: the owner's commands run on the host, not in an environment`,
      ));
    }
    if (done.has(ref.coopfile)) continue;
    done.add(ref.coopfile);
    const users = references.filter((r) => r.coopfile === ref.coopfile).map((r) => r.who);
    const usedBy = `(used by ${users.join(", ")})`;
    let environment;
    try {
      environment = loadEnvironment(config.agent.stateDir, ref.coopfile);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      for (const d of error.diagnostics) {
        out.push(configError(
          "config.coopfile_invalid",
          ref.key,
          `${formatDiagnostic(error.file, d)} ${usedBy}`,
        ));
      }
      continue;
    }
    const network = environment.coopfile.network;
    if (network.mode !== "none") {
      // The build (`coop init`) dials through the same proxy rules, the gateway's sockets never.
      const place = {
        path: "network",
        who: `the build of ${ref.coopfile}`,
        allowDomains: network.allowDomains,
      };
      for (const warning of allowEntryWarnings(config, place)) {
        out.push({
          ...warning,
          path: ref.key,
          message: `${ref.coopfile}: ${warning.path}: ${warning.message}`,
        });
      }
    }
    if (environment.manifest === null) {
      const why = environment.manifestProblem ? `: ${environment.manifestProblem}` : "";
      out.push(configWarning(
        "config.environment_not_built",
        ref.key,
        `the base of ${ref.coopfile} is not built yet${why}; commands ${usedBy} are refused ` +
          `until the owner runs \`coop init --config ${config.file}\``,
      ));
    } else if (environment.stale) {
      out.push(configWarning(
        "config.environment_stale",
        ref.key,
        `${ref.coopfile} changed since its base was built (${environment.manifest.builtAt}); ` +
          `run \`coop rebuild --config ${config.file}\` to apply it`,
      ));
    }
  }
  return out;
}
