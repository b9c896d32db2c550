/**
 * `decide()`: the policy for one `host:port` a sandbox asks its proxy for — the allowlist, the
 * proxy's own name resolution, and `decideAddress()` on every answer. A name that is not allowed
 * is never resolved; an IP-literal entry is the owner's consent to that address.
 * @module
 */
import { Resolver as DnsResolver } from "node:dns/promises";
import { decideAddress, type HostNetwork, type SocketAddress } from "./address_policy.ts";
import { type Allowlist, canonicalAddress, isIpLiteral, normalizeHost } from "./allowlist.ts";
import { hostNetwork } from "./host_network.ts";

/** Resolves a host name to IP addresses (IPv4 and IPv6). */
export type Resolver = (name: string) => Promise<string[]>;

const RESOLVE_TIMEOUT_MS = 5_000;

/** The default resolver: the host's DNS, A and AAAA records. */
export async function systemResolver(name: string): Promise<string[]> {
  const dns = new DnsResolver({ timeout: RESOLVE_TIMEOUT_MS, tries: 1 });
  const [a, aaaa] = await Promise.all([
    dns.resolve4(name).catch(() => [] as string[]),
    dns.resolve6(name).catch(() => [] as string[]),
  ]);
  return [...a, ...aaaa];
}

/** What `decide()` needs besides the allowlist. */
export interface DecideOptions {
  /** Name resolution. */
  resolve: Resolver;
  /** Test hook: every address counts as consented (the rules that never lift still apply). */
  allowPrivateAddresses?: boolean;
  /** Sockets never dialed, even for an IP-literal entry: the gateway's own. */
  neverDial?: readonly SocketAddress[];
  /** This host's interfaces; default `hostNetwork()`, read on each decision. */
  hostNetwork?: () => HostNetwork;
}

/** The outcome of the policy for one `host:port`. */
export type Decision = { address: string } | { reason: string };

const NAME_RULE = "the proxy dials only public addresses for a name; an owner can allow one " +
  "private service by its address, with an IP-literal entry such as 10.0.0.5:8080";
const LITERAL_RULE = "which the proxy never dials, not even for an IP-literal entry";

/**
 * Applies the allowlist, resolution and `decideAddress()` to one `host:port`; the address it
 * returns is the reduced, canonical one the relay must dial. Exported for unit tests.
 */
export async function decide(
  allowlist: Allowlist,
  target: { host: string; port: number },
  options: DecideOptions,
): Promise<Decision> {
  const { port } = target;
  const host = normalizeHost(target.host);
  if (host === null) return { reason: "is not a valid host name" };
  const literal = isIpLiteral(host);
  if (literal && canonicalAddress(host) === null) return { reason: "is not a valid IP address" };
  if (!allowlist.match(host, port)) {
    return allowlist.hasHost(host)
      ? { reason: `uses port ${port}, which the allowlist does not allow for this host` }
      : { reason: "is not in the allowlist" };
  }
  let network: HostNetwork;
  try {
    network = (options.hostNetwork ?? hostNetwork)();
  } catch (error) {
    return {
      reason: "cannot be checked: the proxy could not list this host's network interfaces " +
        `(${(error as Error).message})`,
    };
  }
  let addresses: string[];
  try {
    addresses = literal ? [host] : await options.resolve(host);
  } catch {
    addresses = [];
  }
  if (addresses.length === 0) return { reason: "could not be resolved" };
  // Only an IP-literal entry consents to a non-public address; a name never does.
  const rules = {
    host: network,
    port,
    consent: literal || options.allowPrivateAddresses,
    neverDial: options.neverDial,
  };
  let first: { shown: string; refused: string } | undefined;
  for (const address of addresses) {
    const decision = decideAddress(address, rules);
    if ("address" in decision) return decision;
    first ??= decision;
  }
  return {
    reason: `resolves to ${first!.shown}, ${first!.refused}; ` +
      (literal ? LITERAL_RULE : NAME_RULE),
  };
}
