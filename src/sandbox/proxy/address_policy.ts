/**
 * Which resolved addresses the proxy refuses to dial: everything that is not the public
 * internet — loopback, private, link-local (cloud metadata), CGNAT, multicast, unspecified,
 * reserved, and the IPv6 forms that embed such an IPv4 address.
 * @module
 */

/** Why an address is refused, or null when it is a public unicast address. */
export function forbiddenRange(address: string): string | null {
  const v4 = parseIpv4(address);
  if (v4) return ipv4Range(v4);
  const v6 = parseIpv6(address);
  if (!v6) return "not an IP address";
  return ipv6Range(v6);
}

function parseIpv4(text: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  if (!m) return null;
  const octets = m.slice(1).map(Number);
  return octets.every((o) => o <= 255) ? octets : null;
}

function ipv4Range([a, b, c]: number[]): string | null {
  if (a === 0) return "unspecified or this-network (0.0.0.0/8)";
  if (a === 127) return "loopback (127.0.0.0/8)";
  if (a === 10) return "private (10.0.0.0/8)";
  if (a === 172 && b >= 16 && b <= 31) return "private (172.16.0.0/12)";
  if (a === 192 && b === 168) return "private (192.168.0.0/16)";
  if (a === 169 && b === 254) return "link-local or cloud metadata (169.254.0.0/16)";
  if (a === 100 && b >= 64 && b <= 127) return "carrier-grade NAT (100.64.0.0/10)";
  if (a === 192 && b === 0 && c === 0) return "IETF protocol assignments (192.0.0.0/24)";
  if (a === 198 && (b === 18 || b === 19)) return "benchmarking (198.18.0.0/15)";
  if (a >= 224 && a <= 239) return "multicast (224.0.0.0/4)";
  if (a >= 240) return "reserved or broadcast (240.0.0.0/4)";
  return null;
}

/** Eight 16-bit groups, or null. Accepts `::` compression and a trailing dotted IPv4. */
function parseIpv6(text: string): number[] | null {
  let t = text.toLowerCase().replace(/%.*$/, ""); // a zone id names an interface, not a host
  const dotted = /^(.*:)(\d+\.\d+\.\d+\.\d+)$/.exec(t);
  if (dotted) {
    const v4 = parseIpv4(dotted[2]);
    if (!v4) return null;
    t = `${dotted[1]}${((v4[0] << 8) | v4[1]).toString(16)}:${((v4[2] << 8) | v4[3]).toString(16)}`;
  }
  const halves = t.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  if (![...head, ...rest].every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  const fill = 8 - head.length - rest.length;
  if (halves.length === 1 ? fill !== 0 : fill < 1) return null;
  const hex = (g: string) => parseInt(g, 16);
  return [...head.map(hex), ...Array(halves.length === 2 ? fill : 0).fill(0), ...rest.map(hex)];
}

function embeddedV4(g: number[], at: number): number[] {
  return [g[at] >> 8, g[at] & 0xff, g[at + 1] >> 8, g[at + 1] & 0xff];
}

function ipv6Range(g: number[]): string | null {
  const zeroUpTo = (n: number) => g.slice(0, n).every((x) => x === 0);
  if (zeroUpTo(8)) return "unspecified (::)";
  if (zeroUpTo(7) && g[7] === 1) return "loopback (::1)";
  if (zeroUpTo(5) && g[5] === 0xffff) {
    const inner = ipv4Range(embeddedV4(g, 6));
    return inner ? `IPv4-mapped ${inner}` : null;
  }
  if (zeroUpTo(6)) return "IPv4-compatible (deprecated, ::/96)";
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((x) => x === 0)) {
    const inner = ipv4Range(embeddedV4(g, 6));
    return inner ? `NAT64 ${inner}` : null;
  }
  if (g[0] === 0x2002) {
    const inner = ipv4Range(embeddedV4(g, 1));
    return inner ? `6to4 ${inner}` : null;
  }
  if ((g[0] & 0xfe00) === 0xfc00) return "unique local (fc00::/7)";
  if ((g[0] & 0xffc0) === 0xfe80) return "link-local (fe80::/10)";
  if ((g[0] & 0xffc0) === 0xfec0) return "site-local (fec0::/10)";
  if ((g[0] & 0xff00) === 0xff00) return "multicast (ff00::/8)";
  if (g[0] === 0x2001 && g[1] === 0x0db8) return "documentation (2001:db8::/32)";
  return null;
}
