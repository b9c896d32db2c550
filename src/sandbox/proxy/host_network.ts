/**
 * `hostNetwork()`: this host's interface addresses and the subnets they are on, as the proxy's
 * address rules need them (its own addresses and on-link neighbours are never dialed for a
 * name). Read from `node:os` on every call: DHCP and VPNs change them while Coop runs.
 * @module
 */
import { networkInterfaces } from "node:os";
import { type HostNetwork, parseAddress, reduceAddress } from "./address_policy.ts";

/**
 * Lists every non-loopback interface address with its prefix length. Throws when the
 * interfaces cannot be read: the caller then refuses to dial (fail closed).
 *
 * @example
 * ```ts
 * hostNetwork().interfaces; // [{ name: "eth0", address: IPv4(192.0.2.2), prefixLength: 24 }, …]
 * ```
 */
export function hostNetwork(): HostNetwork {
  const interfaces: HostNetwork["interfaces"][number][] = [];
  for (const [name, entries] of Object.entries(networkInterfaces())) {
    for (const entry of entries ?? []) {
      const parsed = parseAddress(entry.address);
      if (!parsed) continue;
      const { address, form } = reduceAddress(parsed);
      if (address.range() === "loopback") continue; // refused as loopback, whatever the mask
      const mask = parseAddress(entry.netmask);
      const full = address.kind() === "ipv4" ? 32 : 128;
      // An IPv6 interface address that embeds IPv4 keeps only its own address.
      const prefixLength = form ? full : mask?.prefixLengthFromSubnetMask() ?? full;
      interfaces.push({ name, address, prefixLength });
    }
  }
  return { interfaces };
}
