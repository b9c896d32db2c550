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
  checkMessengerChannels,
  checkTerminalUser,
} from "./check_channels.ts";
import { checkCron } from "./check_cron.ts";
import { checkProviders } from "./check_providers.ts";
import { checkPrivatePaths, checkSandbox, checkWorkspace } from "./check_sandbox.ts";
import { checkSecrets } from "./check_secrets.ts";
import { checkTimeouts } from "./check_timeouts.ts";
import { checkGroups, checkUsers } from "./check_users.ts";
import { checkWorkspaceAccess } from "./check_workspace_access.ts";
import { checkNetwork } from "./check_network.ts";
import { checkAllowNetwork } from "./allow_network_alias.ts";

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
  checkTimeouts(config, out);
  checkWorkspace(config, out);
  checkPrivatePaths(config, out);
  checkTerminalUser(config, out);
  checkMessengerChannels(config, out);
  checkHttpChannel(config, out);
  checkDisabledChannels(config, out);
  checkWorkspaceAccess(config, out);
  checkNetwork(config, out);
  checkAllowNetwork(config, out);
  return out;
}
