/**
 * `checkConfig`: the checks that need the whole config, one file per concern —
 * users and groups, cron, providers, secrets, the sandbox and workspace, channels.
 * @module
 */
import type { CoopConfig } from "./config.ts";
import type { ConfigDiagnostic } from "./config_diagnostic.ts";
import {
  checkDisabledChannels,
  checkHttpChannel,
  checkTerminalUser,
  checkUnservedChannels,
} from "./config_check_channels.ts";
import { checkCron } from "./config_check_cron.ts";
import { checkProviders } from "./config_check_providers.ts";
import { checkPrivatePaths, checkSandbox, checkWorkspace } from "./config_check_sandbox.ts";
import { checkSecrets } from "./config_check_secrets.ts";
import { checkGroups, checkUsers } from "./config_check_users.ts";
import { checkWorkspaceAccess } from "./workspace_access_check.ts";
import { checkNetwork } from "./network_check.ts";

/**
 * Returns every problem that needs the whole config: errors stop Coop from starting.
 * `env` looks up environment variables (injectable for tests).
 *
 * @example
 * ```ts
 * const errors = checkConfig(config).filter((d) => d.severity === "error");
 * ```
 */
export function checkConfig(
  config: CoopConfig,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  checkUsers(config, out);
  checkGroups(config, out);
  checkCron(config, out);
  checkProviders(config, out);
  checkSecrets(config, env, out);
  checkSandbox(config, out);
  checkWorkspace(config, out);
  checkPrivatePaths(config, out);
  checkTerminalUser(config, out);
  checkUnservedChannels(config, out);
  checkHttpChannel(config, out);
  checkDisabledChannels(config, out);
  checkWorkspaceAccess(config, out);
  checkNetwork(config, out);
  return out;
}
