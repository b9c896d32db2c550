/**
 * Which address the policy proxy may dial: `decideAddress()`, the one function that decides,
 * on addresses parsed by ipaddr.js — never compared as strings. Every IPv6 form that embeds an
 * IPv4 address (mapped, compatible, NAT64, SIIT, 6to4) is first reduced to that IPv4 address,
 * and the reduced address is both what the rules check and what the relay dials.
 *
 * - For a name, only public unicast addresses are dialed: never loopback, private, link-local
 *   and cloud metadata, CGNAT, multicast, broadcast, unspecified, reserved, documentation,
 *   benchmarking, discard, unique local, site-local, Teredo — nor this host's own addresses
 *   and the subnets it is on (its on-link neighbours), whatever their range.
 * - For an address the owner named in an IP-literal allowlist entry (consent), those rules do
 *   not apply; some never lift: unspecified (it means "this host"), link-local and the known
 *   cloud metadata endpoints, multicast and broadcast, and the gateway's own sockets.
 * @module
 */
import ipaddr from "ipaddr.js";

/** A parsed IPv4 or IPv6 address. */
export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** This host's network as the proxy sees it: each interface address and its subnet. */
export interface HostNetwork {
  /** Interface addresses other than loopback (the loopback range is refused on its own). */
  readonly interfaces: readonly { name: string; address: IpAddress; prefixLength: number }[];
}

/** A socket the proxy never dials; port 0 means every port. */
export interface SocketAddress {
  /** The address, reduced to IPv4 where it embeds one. */
  address: IpAddress;
  /** The port; 0 for every port. */
  port: number;
}

/** What one destination may be. */
export interface DialRules {
  /** This host's interfaces (`hostNetwork()`). */
  host: HostNetwork;
  /** The destination port. */
  port: number;
  /** True when the owner named this address in an IP-literal allowlist entry. */
  consent?: boolean;
  /** Sockets never dialed, even with consent: the gateway's own listeners. */
  neverDial?: readonly SocketAddress[];
}

/** Dial `address` (the reduced, canonical form), or refused: `shown` and why. */
export type AddressDecision = { address: string } | { shown: string; refused: string };

/**
 * Parses an IP address strictly: IPv4 in dotted decimal without leading zeros (`010.0.0.1`
 * means 8.0.0.1 to inet_aton and 10.0.0.1 to others), IPv6 in any valid spelling, an embedded
 * IPv4 tail held to the same rule; a zone id is dropped (it names an interface, not a host).
 * Returns null for anything else.
 */
export function parseAddress(text: string): IpAddress | null {
  if (!text.includes(":")) {
    return ipaddr.IPv4.isValidFourPartDecimal(text) ? ipaddr.IPv4.parse(text) : null;
  }
  const bare = text.slice(0, text.includes("%") ? text.indexOf("%") : undefined);
  const tail = bare.slice(bare.lastIndexOf(":") + 1);
  if (tail.includes(".") && !ipaddr.IPv4.isValidFourPartDecimal(tail)) return null;
  return ipaddr.IPv6.isValid(bare) ? ipaddr.IPv6.parse(bare) : null;
}

/**
 * Parses `IP:PORT` or `[IPv6]:PORT` (port 0: every port) into a socket the proxy never dials;
 * throws a message a user can act on.
 */
export function parseSocketAddress(text: string): SocketAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const address = m ? parseAddress(m[1] ?? m[2]) : null;
  const port = m ? Number(m[3]) : NaN;
  if (!address || !(port <= 65535)) {
    throw new Error(
      `"${text}": expected IP:PORT or [IPv6]:PORT, the port from 0 (every port) to 65535`,
    );
  }
  return { address: reduceAddress(address).address, port };
}

function cidr(text: string): [IpAddress, number] {
  return ipaddr.parseCIDR(text);
}

function inside(address: IpAddress, [network, length]: [IpAddress, number]): boolean {
  return address.kind() === network.kind() && address.match(network, length);
}

/** IPv6 prefixes that carry an IPv4 address, and the 16-bit group where it starts. */
const EMBEDDINGS: readonly { prefix: [IpAddress, number]; form: string; at: number }[] = [
  { prefix: cidr("::ffff:0:0/96"), form: "IPv4-mapped, ::ffff:0:0/96", at: 6 },
  { prefix: cidr("::ffff:0:0:0/96"), form: "SIIT, ::ffff:0:0:0/96", at: 6 },
  { prefix: cidr("64:ff9b::/96"), form: "NAT64, 64:ff9b::/96", at: 6 },
  // RFC 8215 lets each network pick its prefix length inside 64:ff9b:1::/48; only the /96
  // layout is unambiguous. Other addresses there stay IPv6 and are refused as NAT64.
  { prefix: cidr("64:ff9b:1::/96"), form: "local-use NAT64, 64:ff9b:1::/48", at: 6 },
  { prefix: cidr("2002::/16"), form: "6to4, 2002::/16", at: 1 },
  { prefix: cidr("::/96"), form: "IPv4-compatible, ::/96", at: 6 },
];

/**
 * The address a destination really is: an IPv6 form that embeds an IPv4 address becomes that
 * IPv4 address (`form` names the embedding); anything else is returned as is. Idempotent.
 */
export function reduceAddress(address: IpAddress): { address: IpAddress; form: string | null } {
  if (address.kind() !== "ipv6") return { address, form: null };
  const parts = (address as ipaddr.IPv6).parts;
  for (const { prefix, form, at } of EMBEDDINGS) {
    if (!inside(address, prefix)) continue;
    // :: and ::1 are IPv6's own unspecified and loopback addresses, not IPv4-compatible ones.
    if (at === 6 && parts.slice(0, 7).every((p) => p === 0) && parts[7] <= 1) break;
    const v4 = [parts[at] >> 8, parts[at] & 0xff, parts[at + 1] >> 8, parts[at + 1] & 0xff];
    return { address: new ipaddr.IPv4(v4), form };
  }
  return { address, form: null };
}

/** Words for the special ranges ipaddr.js knows (the longest matching prefix names it). */
const RANGE_WORDS: readonly [string, string][] = [
  ["0.0.0.0/8", "unspecified or this network"],
  ["127.0.0.0/8", "loopback"],
  ["10.0.0.0/8", "private"],
  ["172.16.0.0/12", "private"],
  ["192.168.0.0/16", "private"],
  ["169.254.0.0/16", "link-local or cloud metadata"],
  ["100.64.0.0/10", "carrier-grade NAT"],
  ["192.0.0.0/24", "IETF protocol assignments"],
  ["192.0.2.0/24", "documentation (TEST-NET-1)"],
  ["198.51.100.0/24", "documentation (TEST-NET-2)"],
  ["203.0.113.0/24", "documentation (TEST-NET-3)"],
  ["192.88.99.0/24", "deprecated 6to4 relay anycast"],
  ["198.18.0.0/15", "benchmarking"],
  ["224.0.0.0/4", "multicast"],
  ["240.0.0.0/4", "reserved"],
  ["255.255.255.255/32", "broadcast"],
  ["::/128", "unspecified"],
  ["::1/128", "loopback"],
  ["fe80::/10", "link-local"],
  ["fec0::/10", "site-local (deprecated)"],
  ["fc00::/7", "unique local"],
  ["ff00::/8", "multicast"],
  ["100::/64", "discard-only"],
  ["64:ff9b::/96", "NAT64"],
  ["64:ff9b:1::/48", "local-use NAT64 in a layout other than /96"],
  ["2001::/23", "IETF protocol assignments"],
  ["2001::/32", "Teredo, whose embedded IPv4 address is obfuscated"],
  ["2001:2::/48", "benchmarking"],
  ["2001:db8::/32", "documentation"],
  ["3fff::/20", "documentation"],
];
const NAMED = RANGE_WORDS.map(([text, words]) => ({ text, range: cidr(text), words }));
const GLOBAL_UNICAST = cidr("2000::/3");

/** Why `address` (already reduced) is not public unicast, e.g. `private (10.0.0.0/8)`; null
 * when it is. */
export function specialRange(address: IpAddress): string | null {
  const range = address.range();
  if (range === "unicast") {
    if (address.kind() === "ipv6" && !inside(address, GLOBAL_UNICAST)) {
      return "outside global unicast (2000::/3)";
    }
    return null;
  }
  let best: (typeof NAMED)[number] | undefined;
  for (const named of NAMED) {
    if (inside(address, named.range) && (!best || named.range[1] > best.range[1])) best = named;
  }
  // A range a newer ipaddr.js knows and this table does not: refused all the same.
  return best ? `${best.words} (${best.text})` : `special-purpose (${range})`;
}

/** Cloud metadata endpoints outside link-local (AWS over IPv6, Alibaba). */
const METADATA = ["fd00:ec2::254", "100.100.100.200"].map((text) => parseAddress(text)!);

function same(a: IpAddress, b: IpAddress): boolean {
  return a.kind() === b.kind() && a.toString() === b.toString();
}

/** Why no allowlist entry reaches `address`, or null. */
function neverReachable(address: IpAddress, rules: DialRules): string | null {
  const range = address.range();
  if (["unspecified", "linkLocal", "multicast", "broadcast"].includes(range)) {
    return specialRange(address);
  }
  if (METADATA.some((m) => same(m, address))) return "a cloud metadata endpoint";
  const local = (a: IpAddress) =>
    a.range() === "loopback" || a.range() === "unspecified" || ownInterface(a, rules.host);
  for (const socket of rules.neverDial ?? []) {
    if (socket.port !== 0 && socket.port !== rules.port) continue;
    // A socket on one of this host's addresses answers on any of them (0.0.0.0, ::).
    if (same(socket.address, address) || (local(socket.address) && local(address))) {
      return "a socket of the Coop gateway itself";
    }
  }
  return null;
}

function ownInterface(address: IpAddress, host: HostNetwork): string | null {
  return host.interfaces.find((i) => same(i.address, address))?.name ?? null;
}

function onLinkSubnet(address: IpAddress, host: HostNetwork): string | null {
  const i = host.interfaces.find((i) => inside(address, [i.address, i.prefixLength]));
  if (!i) return null;
  const cidrText = `${i.address}/${i.prefixLength}`;
  const network = i.address.kind() === "ipv4"
    ? ipaddr.IPv4.networkAddressFromCIDR(cidrText)
    : ipaddr.IPv6.networkAddressFromCIDR(cidrText);
  return `on-link: in ${network}/${i.prefixLength}, a subnet of the Coop host (${i.name})`;
}

/**
 * Decides whether the proxy may dial `text` (an address from the resolver, or one the client
 * named): `{ address }` — the reduced, canonical form to dial — or why not.
 *
 * @example
 * ```ts
 * const host = hostNetwork();
 * decideAddress("::ffff:10.0.0.5", { host, port: 443 });
 * // { shown: "::ffff:10.0.0.5 (= 10.0.0.5, IPv4-mapped, ::ffff:0:0/96)", refused: "private (10.0.0.0/8)" }
 * decideAddress("10.0.0.5", { host, port: 8080, consent: true }); // { address: "10.0.0.5" }
 * ```
 */
export function decideAddress(text: string, rules: DialRules): AddressDecision {
  const parsed = parseAddress(text);
  if (!parsed) {
    return {
      shown: text,
      refused:
        "not an IP address the proxy accepts (dotted decimal without leading zeros, or IPv6)",
    };
  }
  const { address, form } = reduceAddress(parsed);
  const shown = form ? `${text} (= ${address}, ${form})` : text;
  const never = neverReachable(address, rules);
  if (never) return { shown, refused: never };
  if (rules.consent) return { address: address.toString() };
  const own = ownInterface(address, rules.host);
  if (own) return { shown, refused: `an address of the Coop host itself (${own})` };
  const why = onLinkSubnet(address, rules.host) ?? specialRange(address);
  return why ? { shown, refused: why } : { address: address.toString() };
}
