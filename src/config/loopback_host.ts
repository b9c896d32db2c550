/**
 * Whether a host name or address stays on this machine.
 * @module
 */

/**
 * True for `localhost` and loopback addresses (127.0.0.0/8, `::1`, and 127.x mapped into
 * IPv6), in any spelling the URL parser understands (`127.1`, `[0:0:0:0:0:0:0:1]`). Names other
 * than `localhost` are not resolved: they count as not loopback.
 *
 * @example
 * ```ts
 * isLoopbackHost("127.0.0.1"); // true
 * isLoopbackHost("0.0.0.0"); // false: every interface
 * ```
 */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1");
  let canonical: string;
  try {
    canonical = new URL(`http://${bare.includes(":") ? `[${bare}]` : bare}/`).hostname;
  } catch {
    return false;
  }
  canonical = canonical.replace(/^\[(.*)\]$/, "$1");
  return canonical === "localhost" || canonical === "::1" ||
    /^127\.\d+\.\d+\.\d+$/.test(canonical) ||
    /^::ffff:7f[0-9a-f]{2}:[0-9a-f]{1,4}$/.test(canonical);
}
