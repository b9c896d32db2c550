/**
 * Environment variables that hold credentials — provider keys and channel tokens — with the
 * config key naming each. They stay in the gateway: never passed into a sandbox, nor into the
 * owner's shell.
 * @module
 */
import type { CoopConfig } from "./config.ts";
import { telegramTokenEnv } from "./messenger_schema.ts";

/** `[envName, keyPath]` for every channel token the config refers to. */
export function channelSecrets(config: Pick<CoopConfig, "channels">): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  config.channels.http?.tokens.forEach((t, i) =>
    found.push([t.token_env, `channels.http.tokens[${i}].token_env`])
  );
  const telegram = config.channels.telegram;
  if (telegram) {
    const key = telegram.bot_token_env === undefined ? "token_env" : "bot_token_env";
    found.push([telegramTokenEnv(telegram), `channels.telegram.${key}`]);
  }
  return found;
}

/**
 * `[envName, keyPath]` for every secret the config names: each provider's API key, then every
 * channel token.
 *
 * @example
 * ```ts
 * const secrets = new Map(configSecrets(config)); // "ANTHROPIC_API_KEY" → "providers[0].api_key_env"
 * ```
 */
export function configSecrets(
  config: Pick<CoopConfig, "providers" | "channels">,
): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  config.providers.forEach((provider, i) => {
    if (provider.api_key_env !== undefined) {
      found.push([provider.api_key_env, `providers[${i}].api_key_env`]);
    }
  });
  return [...found, ...channelSecrets(config)];
}
