/**
 * `coop check` warnings about sandbox networking: IP-literal `allow_domains` entries that
 * consent to a private service (or can never be dialed), and `network = "host"` for people
 * other than the owner. docs/network.md explains both.
 * @module
 */
import {
  decideAddress,
  type HostNetwork,
  hostNetwork,
  parseAllowEntry,
  parseSocketAddress,
} from "../sandbox/mod.ts";
import type { CoopConfig } from "./config.ts";
import type { ConfigDiagnostic } from "./config_diagnostic.ts";
import { gatewaySockets } from "./gateway_sockets.ts";

/** One `sandbox` table of the config and whose sandboxes it shapes. */
interface SandboxTable {
  path: string;
  /** Words naming who it applies to, e.g. `user "bob"`. */
  who: string;
  allowDomains?: readonly string[];
  network?: string;
  /** False when only the owner's sandboxes use it (they run on the host except in groups). */
  nonOwner: boolean;
}

function tables(config: CoopConfig): SandboxTable[] {
  const owner = (name: string) => config.users.find((u) => u.name === name)?.trust === "owner";
  const inheritors = config.users.filter((u) => u.trust !== "owner" && !u.sandbox.network)
    .map((u) => u.name);
  return [
    {
      path: "sandbox",
      who: `every sandboxed sender without a network of their own (${
        [...inheritors, "unknown senders"].join(", ")
      })`,
      allowDomains: config.raw.sandbox.allow_domains,
      network: config.raw.sandbox.network,
      nonOwner: true,
    },
    ...config.raw.users.map((u, i) => ({
      path: `users[${i}].sandbox`,
      who: `user "${u.name}"`,
      allowDomains: u.sandbox?.allow_domains,
      network: u.sandbox?.network,
      nonOwner: u.trust !== "owner",
    })),
    ...config.raw.cron.map((c, i) => ({
      path: `cron[${i}].sandbox`,
      who: `cron job "${c.name}" (user "${c.user}")`,
      allowDomains: c.sandbox?.allow_domains,
      network: c.sandbox?.network,
      nonOwner: !owner(c.user),
    })),
  ];
}

function currentHostNetwork(): HostNetwork {
  try {
    return hostNetwork();
  } catch {
    return { interfaces: [] }; // the ranges alone still tell private from public
  }
}

/**
 * The warnings for allowlist entries of one place (`path`, e.g. `users[1].sandbox`, and `who` it
 * shapes): one per IP-literal entry that reaches a non-public address, or never reaches it — a
 * gateway socket, say. Shared by coop.toml's tables and the Coopfiles' `[network]` (the build).
 */
export function allowEntryWarnings(
  config: CoopConfig,
  place: { path: string; who: string; allowDomains: readonly string[] },
): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  const host = currentHostNetwork();
  const neverDial = gatewaySockets(config).map(parseSocketAddress);
  place.allowDomains.forEach((source, j) => {
    const entry = parseAllowEntry(source);
    if (entry.address === undefined) return;
    const path = `${place.path}.allow_domains[${j}]`;
    for (const port of entry.ports) {
      const consented = decideAddress(entry.address, { host, port, consent: true, neverDial });
      if ("refused" in consented) {
        out.push({
          severity: "warning",
          code: "config.allow_domains_never_dialed",
          path,
          message: `"${source}" (${place.who}) is never dialed, not even as an IP-literal ` +
            `entry: ${entry.address}:${port} is ${consented.refused}; remove it`,
        });
        return;
      }
    }
    const plain = decideAddress(entry.address, { host, port: entry.ports[0], neverDial });
    if ("address" in plain) return;
    out.push({
      severity: "warning",
      code: "config.allow_domains_private",
      path,
      message: `"${source}" lets ${place.who} reach ${entry.address} on port ` +
        `${entry.ports.join(" and ")}, ${plain.refused}: the proxy dials it only because this ` +
        "IP-literal entry names it. Make sure that service is meant for them",
    });
  });
  return out;
}

/** Warns once per IP-literal entry of coop.toml that reaches a non-public address, or never. */
function checkConsentEntries(config: CoopConfig, out: ConfigDiagnostic[]): void {
  for (const table of tables(config)) {
    if (!table.allowDomains) continue;
    out.push(...allowEntryWarnings(config, { ...table, allowDomains: table.allowDomains }));
  }
}

/** Warns for each place that gives someone other than the owner the host's network. */
function checkHostNetwork(config: CoopConfig, out: ConfigDiagnostic[]): void {
  for (const table of tables(config)) {
    if (table.network !== "host" || !table.nonOwner) continue;
    out.push({
      severity: "warning",
      code: "config.network_host",
      path: `${table.path}.network`,
      message: `network = "host" gives ${table.who} the host's network: the host's loopback ` +
        "services (databases, model servers, Coop's own ports) are reachable from their " +
        "commands, and so are its abstract unix socket names where the kernel lacks Landlock " +
        'ABI 6. Use network = "proxy" with allow_domains instead',
    });
  }
}

/** Appends the network warnings for `config` to `out`. */
export function checkNetwork(config: CoopConfig, out: ConfigDiagnostic[]): void {
  checkConsentEntries(config, out);
  checkHostNetwork(config, out);
}
