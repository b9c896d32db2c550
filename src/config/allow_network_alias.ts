/**
 * `allow_network = true/false`, the owner-role spec's spelling of `network`: accepted as an
 * alias with a warning that names the preferred key (`coop check`).
 * @module
 */
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError, configWarning } from "./config_diagnostic.ts";

/** A network mode `allow_network` can stand for. */
export type AliasedNetwork = "none" | "public";

/**
 * The `network` that `allow_network = value` stands for, or null when this build has none.
 *
 * `false` is `"none"`. `true` means "the internet, not the LAN": the `public` mode (any public
 * unicast address, nothing private, loopback, link-local or metadata; docs/network.md).
 */
export function networkOfAllowNetwork(allow: boolean): AliasedNetwork | null {
  return allow ? "public" : "none";
}

/** The preferred spelling of `allow_network = value`, for messages. */
function preferred(allow: boolean): string {
  return allow ? 'network = "public"' : 'network = "none"';
}

/** Warns about every `allow_network`, and refuses one this build cannot honour. */
export function checkAllowNetwork(config: CoopConfig, out: ConfigDiagnostic[]): void {
  type Table = { allow_network?: boolean; network?: string } | undefined;
  const tables: Array<readonly [string, Table]> = [
    ["sandbox", config.raw.sandbox] as const,
    ...config.raw.users.map((u, i) => [`users[${i}].sandbox`, u.sandbox] as const),
    ...config.raw.cron.map((c, i) => [`cron[${i}].sandbox`, c.sandbox] as const),
  ];
  for (const [where, table] of tables) {
    const allow = table?.allow_network;
    if (allow === undefined) continue;
    const path = `${where}.allow_network`;
    if (table!.network !== undefined) {
      out.push(configError(
        "config.allow_network_conflict",
        path,
        `is the older spelling of network, which this table sets too (network = ` +
          `"${table!.network}"); remove allow_network`,
      ));
    } else if (networkOfAllowNetwork(allow) === null) {
      out.push(configError(
        "config.allow_network_unsupported",
        path,
        `true means ${preferred(true)} (the internet but not the LAN), which this build does ` +
          `not have; use network = "proxy" with allow_domains (docs/network.md)`,
      ));
    } else {
      out.push(configWarning(
        "config.allow_network_alias",
        path,
        `is the owner-role spec's spelling; write ${preferred(allow)} instead`,
      ));
    }
  }
}
