/**
 * `watchedHostNetwork()`: this host's interfaces for the proxy's address rules, listed again
 * only when the kernel announced a change. Listing them (`hostNetwork()`, node:os) costs ~0.1
 * ms, on every connection a sandbox opens; a NETLINK_ROUTE socket subscribed to link and
 * address events (`coop_netwatch_*` in ffi/relay.c) costs one non-blocking read. The kernel
 * queues a notification before the call that changed an address returns, so a decision that
 * finds none sees what a fresh listing would; an overflowed queue counts as a change. Where
 * the socket cannot be opened or read, every decision lists the interfaces as before.
 * @module
 */
import type { Trampoline } from "../ffi.ts";
import type { HostNetwork } from "./address_policy.ts";
import { hostNetwork } from "./host_network.ts";

/** The process's one subscription: its socket and the listing it last vouched for. */
let watch: { fd: number; network: HostNetwork | null } | null | undefined;

/**
 * This host's interfaces as `hostNetwork()` lists them, from the last listing while no change
 * was announced since. Throws when they cannot be listed (the caller refuses to dial).
 *
 * @example
 * ```ts
 * const network = watchedHostNetwork(await loadTrampoline());
 * ```
 */
export function watchedHostNetwork(lib: Trampoline): HostNetwork {
  if (watch === undefined) {
    // One socket for the process, opened on first use and kept, like the trampoline itself.
    const fd = lib.coop_netwatch_open();
    watch = fd >= 0 ? { fd, network: null } : null;
  }
  if (watch === null) return hostNetwork();
  const changed = lib.coop_netwatch_changed(watch.fd);
  if (changed === 0 && watch.network !== null) return watch.network;
  watch.network = null; // a listing that throws leaves nothing stale behind
  const network = hostNetwork();
  // A read error says nothing about changes: that listing serves this decision only.
  if (changed >= 0) watch.network = network;
  return network;
}
