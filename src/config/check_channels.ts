/**
 * `coop check`: channels — what `coop start` would serve, and how.
 * @module
 */
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError, configWarning } from "./config_diagnostic.ts";
import { configSchema } from "./config_schema.ts";
import { isLoopbackHost } from "./loopback_host.ts";
import { SIGNAL_RPC_DEFAULT, TELEGRAM_API_DEFAULT } from "./messenger_schema.ts";

/**
 * Telegram's older `token_env` spelling, and a Bot API or signal-cli daemon reached over plain
 * HTTP beyond this machine (the bot token and every message would cross the network unencrypted).
 */
export function checkMessengerChannels(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const telegram = config.channels.telegram;
  if (telegram?.token_env !== undefined && telegram.bot_token_env === undefined) {
    out.push(configWarning(
      "config.renamed_key",
      "channels.telegram.token_env",
      `token_env is the older spelling of bot_token_env; rename it (bot_token_env = "${telegram.token_env}")`,
    ));
  }
  const urls: Array<[string, string | undefined]> = [
    ["channels.telegram.api_base_url", telegram?.enabled ? telegram.api_base_url : undefined],
    [
      "channels.signal.rpc_url",
      config.channels.signal?.enabled ? config.channels.signal.rpc_url : undefined,
    ],
  ];
  for (const [path, url] of urls) {
    if (url === undefined || !url.startsWith("http://")) continue;
    const host = new URL(url).hostname.replace(/^\[|\]$/g, "");
    if (isLoopbackHost(host)) continue;
    out.push(configWarning(
      "config.channel_not_encrypted",
      path,
      `"${url}" is plain HTTP to another machine: credentials and messages cross the network ` +
        "unencrypted; use https:// or a daemon on this machine",
    ));
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
 * at all; everything else they set beyond their defaults is the owner's. */
const CHANNEL_DEFAULTS: Readonly<Record<string, Record<string, unknown>>> = (() => {
  const channels = configSchema.parse({ channels: { terminal: {}, http: {} } }).channels;
  return {
    terminal: channels.terminal ?? {},
    http: channels.http ?? {},
    telegram: { enabled: false, api_base_url: TELEGRAM_API_DEFAULT },
    signal: { enabled: false, rpc_url: SIGNAL_RPC_DEFAULT },
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
