/**
 * The policy proxy behind network "proxy": allowlist, address checks and the proxy server.
 * @module
 */
export { forbiddenRange } from "./address_policy.ts";
export { type AllowEntry, Allowlist, DEFAULT_PORTS, parseAllowEntry } from "./allowlist.ts";
export {
  decide,
  type Decision,
  type PolicyProxy,
  type PolicyProxyOptions,
  PROXY_USER,
  type ProxyDenial,
  proxyUrl,
  type Resolver,
  startPolicyProxy,
  systemResolver,
} from "./policy_proxy.ts";
