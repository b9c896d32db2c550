/**
 * Everything `coop check` reports about a loaded config, in one place: the config's own checks and
 * every Coopfile it references. `coop check`, `coop start` and a reload of the running gateway
 * all take their verdict from here, so that a reload is refused exactly when a start would be.
 * @module
 */
import type { CoopConfig } from "../config/config.ts";
import { checkConfig } from "../config/config_check.ts";
import type { ConfigDiagnostic } from "../config/config_diagnostic.ts";
import { checkEnvironments } from "../environments/check_environments.ts";

/** The config's diagnostics and its environments'; `env` as `checkConfig` takes it. */
export function diagnoseConfig(
  config: CoopConfig,
  env?: (name: string) => string | undefined,
): ConfigDiagnostic[] {
  return [...checkConfig(config, env), ...checkEnvironments(config)];
}
