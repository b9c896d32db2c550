/**
 * The proxy's domain allowlist: exact names, `*.` wildcards and an optional `:port`.
 *
 * - `example.com` allows `example.com` on ports 80 and 443 only.
 * - `example.com:8443` allows `example.com` on port 8443 only.
 * - `*.example.org` allows every name below `example.org` (not `example.org` itself) on 80/443.
 * - An IPv4 or bracketed IPv6 literal (`10.0.0.5:8080`, `[fd00::5]:443`) allows that address
 *   when the client names it literally — and is the owner's consent to dial it even when it is
 *   private or loopback (address_policy.ts says what never lifts). Literals compare parsed,
 *   reduced to IPv4 where they embed one: `[::ffff:10.0.0.5]` is `10.0.0.5`.
 *
 * Names are compared lowercased and without a trailing dot.
 * @module
 */
import { parseAddress, reduceAddress } from "./address_policy.ts";

/** Ports an entry without `:port` allows. */
export const DEFAULT_PORTS: readonly number[] = [80, 443];

/** One parsed allowlist entry. */
export interface AllowEntry {
  /** The entry as written. */
  source: string;
  /** Lowercased name (without `*.`), or an IP literal without brackets. */
  host: string;
  /** True for `*.name`: matches names strictly below `host`. */
  wildcard: boolean;
  /** Allowed ports. */
  ports: readonly number[];
  /** For an IP literal: the address, parsed and reduced, in canonical form. */
  address?: string;
}

const LABEL = /^(?!-)[a-z0-9_-]{1,63}(?<!-)$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

/** Lowercases a host name and drops one trailing dot; returns null when it is not a name. */
export function normalizeHost(host: string): string | null {
  let h = host.toLowerCase();
  if (h.endsWith(".")) h = h.slice(0, -1);
  if (h.startsWith("[") && h.endsWith("]")) h = h.slice(1, -1);
  if (h.includes(":")) return /^[0-9a-f:.]+$/.test(h) ? h : null; // IPv6 literal
  if (h.length === 0 || h.length > 253) return null;
  return h.split(".").every((label) => LABEL.test(label)) ? h : null;
}

/** True when `host` (normalized) is an IPv4 or IPv6 literal. */
export function isIpLiteral(host: string): boolean {
  return IPV4.test(host) || host.includes(":");
}

/** The canonical, reduced form of an IP literal (`::ffff:a00:5` → `10.0.0.5`), or null. */
export function canonicalAddress(literal: string): string | null {
  const parsed = parseAddress(literal);
  return parsed ? reduceAddress(parsed).address.toString() : null;
}

/** Parses one `HOST[:PORT]` entry; throws a message a user can act on. */
export function parseAllowEntry(source: string): AllowEntry {
  const text = source.trim();
  let hostPart = text, portPart: string | undefined;
  const v6 = /^\[([^\]]+)\](?::(.*))?$/.exec(text);
  if (v6) {
    hostPart = v6[1];
    portPart = v6[2];
  } else if (text.includes(":")) {
    if (text.indexOf(":") !== text.lastIndexOf(":")) {
      throw new Error(`"${source}": write IPv6 addresses in brackets, e.g. [2001:db8::1]:443`);
    }
    [hostPart, portPart] = text.split(":");
  }
  let ports = DEFAULT_PORTS;
  if (portPart !== undefined) {
    const port = Number(portPart);
    if (!/^\d+$/.test(portPart) || port < 1 || port > 65535) {
      throw new Error(`"${source}": the port must be a number from 1 to 65535`);
    }
    ports = [port];
  }
  const wildcard = hostPart.startsWith("*.");
  const host = normalizeHost(wildcard ? hostPart.slice(2) : hostPart);
  if (host === null || host.includes("*")) {
    throw new Error(
      `"${source}": expected HOST, *.DOMAIN or an IP address, optionally with :PORT`,
    );
  }
  if (wildcard && (isIpLiteral(host) || !host.includes("."))) {
    throw new Error(`"${source}": a wildcard needs a domain with a dot, e.g. *.example.com`);
  }
  if (!isIpLiteral(host)) return { source, host, wildcard, ports };
  const address = canonicalAddress(host);
  if (address === null) {
    throw new Error(
      `"${source}": not a valid IP address (IPv4 in dotted decimal without leading zeros, ` +
        "IPv6 in brackets)",
    );
  }
  return { source, host, wildcard, ports, address };
}

/** A set of allowlist entries. */
export class Allowlist {
  readonly entries: readonly AllowEntry[];

  constructor(sources: readonly string[]) {
    this.entries = sources.map(parseAllowEntry);
  }

  /** The entry allowing `host:port` (host normalized), or undefined. */
  match(host: string, port: number): AllowEntry | undefined {
    return this.#named(host).find((entry) => entry.ports.includes(port));
  }

  /** True when some entry names `host`, whatever its ports (for a precise denial reason). */
  hasHost(host: string): boolean {
    return this.#named(host).length > 0;
  }

  /** Entries naming `host`: an IP literal by its parsed address, a name by its text. */
  #named(host: string): AllowEntry[] {
    if (isIpLiteral(host)) {
      const address = canonicalAddress(host);
      return this.entries.filter((entry) => address !== null && entry.address === address);
    }
    return this.entries.filter((entry) =>
      entry.address === undefined &&
      (entry.wildcard ? host.endsWith(`.${entry.host}`) : host === entry.host)
    );
  }
}
