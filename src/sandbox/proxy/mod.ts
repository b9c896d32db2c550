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
  decide,
  type DecideOptions,
  type Decision,
  DEFAULT_PROXY_MAX_CONNECTIONS,
  type PolicyProxy,
  type PolicyProxyOptions,
  PROXY_USER,
  type ProxyDenial,
  proxyUrl,
  type Resolver,
  startPolicyProxy,
  systemResolver,
} from "./policy_proxy.ts";
