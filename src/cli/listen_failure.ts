/**
 * What to tell the owner when the HTTP channel cannot listen on its address.
 * @module
 */

/** Why listening on `listen` failed and what to do, or undefined for an unexpected error. */
export function listenFailure(error: unknown, listen: string): string | undefined {
  const port = listen.slice(listen.lastIndexOf(":") + 1);
  switch ((error as { code?: string }).code) {
    case "EADDRINUSE":
      return `the address is already in use; stop the program listening there (\`ss -ltnp 'sport = :${port}'\` names it) or choose another port`;
    case "EACCES":
      return "permission denied; ports below 1024 need privileges, choose a port above 1023";
    case "EADDRNOTAVAIL":
      return "no network interface has this address; use 127.0.0.1 or an address of this machine";
  }
  if (/failed to lookup address/.test(String((error as Error)?.message))) {
    return "the host name does not resolve; use an IP address such as 127.0.0.1";
  }
  return undefined;
}
