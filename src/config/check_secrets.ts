/**
 * `coop check`: secrets — provider keys and channel tokens set, unique, never passed into a sandbox.
 * @module
 */
import { channelSecrets, configSecrets } from "./channel_secrets.ts";
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError, configWarning } from "./config_diagnostic.ts";

/** Keys and tokens missing from the environment, duplicate token ids, secrets in env_passthrough. */
export function checkSecrets(
  config: CoopConfig,
  env: (name: string) => string | undefined,
  out: ConfigDiagnostic[],
): void {
  const secrets = new Map(configSecrets(config));
  config.providers.forEach((provider, i) => {
    if (provider.api_key_env === undefined) return;
    if (!env(provider.api_key_env)) {
      out.push(configWarning(
        "config.missing_provider_key",
        `providers[${i}].api_key_env`,
        `environment variable ${provider.api_key_env} is not set (provider "${provider.name}")`,
      ));
    }
  });
  for (const [name, path] of channelSecrets(config)) {
    if (!env(name)) {
      out.push(configWarning(
        "config.missing_channel_token",
        path,
        `environment variable ${name} is not set; ` +
          (path.startsWith("channels.telegram")
            ? "coop start cannot serve Telegram without the bot token"
            : "requests with that token will be refused"),
      ));
    }
  }
  const tokenIds = new Set<string>();
  config.channels.http?.tokens.forEach((t, i) => {
    if (tokenIds.has(t.id)) {
      out.push(configError(
        "config.duplicate_token_id",
        `channels.http.tokens[${i}].id`,
        `"${t.id}" is listed twice; each token speaks as http:<id>`,
      ));
    }
    tokenIds.add(t.id);
  });
  const passthroughs: Array<[string, readonly string[] | undefined]> = [
    ["sandbox", config.raw.sandbox.env_passthrough],
    ...config.raw.users.map((u, i) =>
      [`users[${i}].sandbox`, u.sandbox?.env_passthrough] as [string, readonly string[] | undefined]
    ),
    ...config.raw.cron.map((c, i) =>
      [`cron[${i}].sandbox`, c.sandbox?.env_passthrough] as [string, readonly string[] | undefined]
    ),
  ];
  for (const [where, names] of passthroughs) {
    names?.forEach((name, j) => {
      const source = secrets.get(name);
      if (source) {
        out.push(configError(
          "config.secret_passthrough",
          `${where}.env_passthrough[${j}]`,
          `${name} is a secret (${source}); secrets never enter a sandbox`,
        ));
      }
    });
  }
}
