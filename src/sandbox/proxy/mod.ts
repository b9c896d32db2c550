/**
 * The policy proxy behind network "proxy": allowlist, address checks and the proxy server.
 * @module
 */
export {
  type AddressDecision,
  decideAddress,
  type DialRules,
  type HostNetwork,
  type IpAddress,
  parseAddress,
  parseSocketAddress,
  reduceAddress,
  type SocketAddress,
  specialRange,
} from "./address_policy.ts";
export {
  type AllowEntry,
  Allowlist,
  canonicalAddress,
  DEFAULT_PORTS,
  parseAllowEntry,
} from "./allowlist.ts";
export { hostNetwork } from "./host_network.ts";
export {
  DEFAULT_PROXY_MAX_CONNECTIONS,
  type PolicyProxy,
  type PolicyProxyOptions,
  PROXY_USER,
  type ProxyDenial,
  proxyUrl,
  startPolicyProxy,
} from "./policy_proxy.ts";
export { type ProxyDirSweep, sweepDeadProxyDirs } from "./socket_dir.ts";
export {
  decide,
  type DecideOptions,
  type Decision,
  type Resolver,
  systemResolver,
} from "./proxy_decision.ts";
