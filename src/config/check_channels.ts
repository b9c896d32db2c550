/**
 * `coop check`: channels — what `coop start` would serve, and how.
 * @module
 */
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError, configWarning } from "./config_diagnostic.ts";
import { configSchema } from "./config_schema.ts";
import { isLoopbackHost } from "./loopback_host.ts";

/** Channels the config may describe that no command of this version serves. */
const UNSERVED_CHANNELS = ["telegram", "signal"] as const;

/** Channels enabled that this version does not serve. */
export function checkUnservedChannels(config: CoopConfig, out: ConfigDiagnostic[]): void {
  for (const name of UNSERVED_CHANNELS) {
    if (config.channels[name]?.enabled) {
      out.push(configWarning(
        "config.channel_not_served",
        `channels.${name}.enabled`,
        `${name} is enabled, but this version of Coop does not serve it yet (coop start ignores it)`,
      ));
    }
  }
}

/** The unknown `channels.terminal.user`. */
export function checkTerminalUser(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const terminalUser = config.channels.terminal?.user;
  if (terminalUser && !config.users.some((u) => u.name === terminalUser)) {
    out.push(
      configError(
        "config.unknown_user",
        "channels.terminal.user",
        `no user named "${terminalUser}"`,
      ),
    );
  }
}

/** HTTP that refuses everyone (no tokens) or listens beyond this machine. */
export function checkHttpChannel(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const http = config.channels.http;
  if (!http?.enabled) return;
  if (http.tokens.length === 0) {
    out.push(configWarning(
      "config.http_without_tokens",
      "channels.http.tokens",
      "HTTP is enabled but lists no [[channels.http.tokens]]: every request is refused (401); " +
        "add one per sender",
    ));
  }
  const host = http.listen.slice(0, http.listen.lastIndexOf(":"));
  if (!isLoopbackHost(host)) {
    out.push(configWarning(
      "config.http_not_loopback",
      "channels.http.listen",
      `"${http.listen}" accepts connections from other machines, and Coop speaks plain HTTP: ` +
        "tokens and messages cross the network unencrypted; listen on 127.0.0.1 behind a " +
        "TLS-terminating proxy",
    ));
  }
}

/** What each channel's table holds when it only says `enabled` (its defaults). */
/** What each channel's table holds when it sets nothing: taken from the schema itself, so a key
 * added there is never mistaken for one the owner set. Telegram and Signal need a key to parse
 * at all; everything they set beyond `enabled` is the owner's. */
const CHANNEL_DEFAULTS: Readonly<Record<string, Record<string, unknown>>> = (() => {
  const channels = configSchema.parse({ channels: { terminal: {}, http: {} } }).channels;
  return {
    terminal: channels.terminal ?? {},
    http: channels.http ?? {},
    telegram: { enabled: false },
    signal: { enabled: false },
  };
})();

/** A channel's table that sets something but leaves the channel off (`enabled` is false). */
export function checkDisabledChannels(config: CoopConfig, out: ConfigDiagnostic[]): void {
  for (const [name, defaults] of Object.entries(CHANNEL_DEFAULTS)) {
    const table = config.raw.channels[name as keyof typeof config.raw.channels] as
      | Record<string, unknown>
      | undefined;
    if (!table || table.enabled) continue;
    const set = Object.keys(table).filter((key) =>
      key !== "enabled" && JSON.stringify(table[key]) !== JSON.stringify(defaults[key])
    );
    if (set.length === 0) continue;
    const byDefault = defaults.enabled === false ? " (enabled defaults to false)" : "";
    out.push(configWarning(
      "config.channel_disabled",
      `channels.${name}.enabled`,
      `[channels.${name}] sets ${set.join(", ")} but the channel is not enabled${byDefault}; ` +
        "set enabled = true to use it, or remove what it sets",
    ));
  }
}
