/**
 * Environment variables that hold channel credentials, with the config key naming each. They
 * stay in the gateway: never passed into a sandbox, nor into the owner's shell.
 * @module
 */
import type { CoopConfig } from "./config.ts";

/** `[envName, keyPath]` for every channel token the config refers to. */
export function channelSecrets(config: Pick<CoopConfig, "channels">): Array<[string, string]> {
  const found: Array<[string, string]> = [];
  config.channels.http?.tokens.forEach((t, i) =>
    found.push([t.token_env, `channels.http.tokens[${i}].token_env`])
  );
  if (config.channels.telegram) {
    found.push([config.channels.telegram.token_env, "channels.telegram.token_env"]);
  }
  return found;
}
