/**
 * The secrets the gateway holds — every provider's API key (`api_key_env`) and every channel
 * token (`channel_secrets.ts`) — as the leak detector looks for them (src/leaks/).
 * @module
 */
import type { HeldSecret } from "../leaks/leak_detector.ts";
import { channelSecrets } from "./channel_secrets.ts";
import type { CoopConfig } from "./config.ts";

/**
 * The values of the secrets `config` names, read through `env`; unset ones are skipped.
 *
 * @example
 * ```ts
 * const detector = new LeakDetector(heldSecrets(config));
 * ```
 */
export function heldSecrets(
  config: Pick<CoopConfig, "providers" | "channels">,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): HeldSecret[] {
  const held: HeldSecret[] = [];
  const add = (name: string, kind: string, label: string) => {
    const value = env(name);
    if (value) held.push({ value, kind, label });
  };
  for (const provider of config.providers) {
    if (provider.api_key_env) add(provider.api_key_env, "provider_key", "provider key");
  }
  for (const [name] of channelSecrets(config)) add(name, "channel_token", "channel token");
  return held;
}
