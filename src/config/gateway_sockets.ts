/**
 * `gatewaySockets()`: the sockets the gateway itself listens on, which a sandbox's proxy must
 * never dial — not even for an owner's IP-literal allowlist entry (docs/network.md).
 * @module
 */
import { parseAddress } from "../sandbox/mod.ts";
import type { CoopConfig } from "./config.ts";

/**
 * Returns the gateway's listening sockets as `IP:PORT` for the sandbox policy's
 * `proxyNeverDial`. A listen name (`localhost`) becomes `0.0.0.0`, which the proxy reads as
 * "any address of this host"; port 0 (a free port chosen at start) stays 0: every port.
 *
 * @example
 * ```ts
 * gatewaySockets(config); // ["127.0.0.1:8787"] with [channels.http] enabled on its default
 * ```
 */
export function gatewaySockets(config: CoopConfig): string[] {
  const http = config.channels.http;
  if (!http?.enabled) return [];
  const at = http.listen.lastIndexOf(":");
  const host = http.listen.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  const ip = parseAddress(host) ? (host.includes(":") ? `[${host}]` : host) : "0.0.0.0";
  return [`${ip}:${http.listen.slice(at + 1)}`];
}
