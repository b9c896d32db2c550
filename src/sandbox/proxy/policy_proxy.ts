/**
 * `startPolicyProxy()`: the one way out of a sandbox with network "proxy" or "public". An
 * HTTP proxy on a unix socket (the sandbox's forwarder relays 127.0.0.1:3128 to it, and its
 * capture listener turns every other TCP connection into a CONNECT) that answers CONNECT and
 * absolute-URI requests, and only for the holder of its token, to the allowlisted
 * `host:port`s (network "public": any public one), plus the stub resolver's RESOLVE. It resolves names itself — names that are not allowed are never resolved —,
 * lets `decideAddress()` refuse every address that is not public unicast (loopback, private,
 * link-local and metadata, CGNAT, this host's own addresses and subnets, …) unless the owner
 * consented with an IP-literal entry, and dials the address it checked.
 *
 * One proxy per sandbox: its token, allowlist, denials and connection cap are that sandbox's
 * alone.
 * @module
 */
import { parseSocketAddress } from "./address_policy.ts";
import { Allowlist, isIpLiteral, normalizeHost } from "./allowlist.ts";
import { decide, type DecideOptions, type Resolver, systemResolver } from "./proxy_decision.ts";
import {
  bytesToLatin1,
  headerValue,
  latin1ToBytes,
  parseRequestHead,
  type RequestHead,
  textResponse,
} from "./http_head.ts";
import { errnoText } from "../errno.ts";
import { sameSecret } from "../secret_compare.ts";
import { randomBytes } from "node:crypto";
import { listenRelay, type RelayConnection } from "./native_relay.ts";
import { loadTrampoline } from "../ffi.ts";
import { watchedHostNetwork } from "./host_network_watch.ts";
import { makeSocketDir } from "./socket_dir.ts";

/** One request the proxy refused by policy. */
export interface ProxyDenial {
  /** The host as the client named it (normalized when it was a valid name). */
  host: string;
  /** The port it asked for; 0 for a name the sandbox's resolver asked about. */
  port: number;
  /** Why, in words a model can act on. */
  reason: string;
}

/** Options of one policy proxy. */
export interface PolicyProxyOptions {
  /** `HOST[:PORT]` entries (see allowlist.ts). */
  allowDomains: readonly string[];
  /** Name resolution; default: the host's resolver (DNS A and AAAA records, `node:dns`). */
  resolve?: Resolver;
  /**
   * Dial loopback, private, link-local and other non-public addresses too. For tests that
   * need servers on the host's loopback; production never sets it.
   */
  allowPrivateAddresses?: boolean;
  /**
   * Network "public": any host and port, public unicast addresses only; `allowDomains` is
   * ignored.
   */
  anyPublic?: boolean;
  /** Test hook: addresses treated as public unicast (loopback servers standing for the internet). */
  publicForTests?: readonly string[];
  /**
   * `IP:PORT` sockets never dialed, even for an IP-literal entry (the gateway's own listeners;
   * port 0: every port). An address of this host stands for all of them.
   */
  neverDial?: readonly string[];
  /** Most connections open at once; more are refused with a 503. Default 64. */
  maxConnections?: number;
  /** Called for each denial, as it happens. */
  onDenied?: (denial: ProxyDenial) => void;
  /** Called once the proxy has closed: after its last `onDenied`. */
  onClosed?: () => void;
  /** Called when the connection cap first refuses a connection. */
  onCapReached?: (maxConnections: number) => void;
  /** Owner of the socket: the sandbox's outer ids, when they differ (socket_dir.ts). */
  socketOwner?: { uid: number; gid: number };
}

/** A running policy proxy. */
export interface PolicyProxy {
  /** The unix socket it listens on (host path). */
  readonly socketPath: string;
  /** The secret the sandbox authenticates with (`Proxy-Authorization: Basic coop:<token>`). */
  readonly token: string;
  /** The latest denials, at most `MAX_KEPT_DENIALS` (a live session's proxy lives for hours). */
  readonly denials: readonly ProxyDenial[];
  /** Every denial so far, also those no longer kept in `denials`. */
  readonly denialCount: number;
  /** Connections refused so far because `maxConnections` were open. */
  readonly refusedConnections: number;
  /**
   * Once the sandbox is gone: takes every connection it made that reached the socket, and
   * resolves when each has been decided, so `denials` is complete. Dials fail from then on.
   */
  drain(): Promise<void>;
  /** Stops listening, closes every open connection and removes the socket. */
  close(): Promise<void>;
}

/**
 * Denials a proxy keeps: a loop in a live session can be refused a thousand times a second for
 * hours, and each kept denial is memory of the gateway's.
 */
export const MAX_KEPT_DENIALS = 1000;

/** Why a name lookup was refused (the denial's port is 0: no connection was attempted). */
const LOOKUP_DENIED = "is not in the allowlist: the sandbox's resolver answered NXDOMAIN, " +
  "and the name was never looked up outside";

/** User name in the proxy URL; the password is the token. */
export const PROXY_USER = "coop";
/** Default cap on one proxy's open connections: each costs a relay thread in the gateway. */
export const DEFAULT_PROXY_MAX_CONNECTIONS = 64;
// The head (30 s) and connect (10 s) timeouts are enforced by the relay (ffi/relay.c).
function parseAuthority(authority: string): { host: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[^:\[\]]+):(\d{1,5})$/.exec(authority);
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 65535) return null;
  return { host: m[1], port: Number(m[2]) };
}

function denialBody(host: string, port: number, reason: string): string {
  return `coop: blocked by sandbox policy: ${host}:${port} ${reason}. Do not retry via ` +
    "--noproxy, another resolver or a raw IP address: this sandbox has no other route out. " +
    "If the task needs this host, ask the owner to add it to allow_domains.\n";
}

function tokenMatches(head: RequestHead, token: string): boolean {
  const value = headerValue(head, "proxy-authorization");
  const m = value && /^Basic\s+([A-Za-z0-9+/=]+)$/i.exec(value);
  if (!m) return false;
  let decoded: string;
  try {
    decoded = atob(m[1]);
  } catch {
    return false;
  }
  // Constant time: the token is the sandbox's only credential. atob gives one char per byte.
  return sameSecret(latin1ToBytes(decoded), latin1ToBytes(`${PROXY_USER}:${token}`));
}

/** Headers a forwarded plain-HTTP request loses: hop-by-hop and the proxy's own. */
const DROPPED = new Set([
  "proxy-authorization",
  "proxy-connection",
  "connection",
  "keep-alive",
  "host",
]);

/** The origin-form request sent upstream: Host is the authority the policy checked. */
function originRequest(head: RequestHead, url: URL): Uint8Array {
  const lines = [
    `${head.method} ${url.pathname}${url.search} ${head.version}`,
    `Host: ${url.host}`,
  ];
  for (const [name, value] of head.headers) {
    if (!DROPPED.has(name.toLowerCase())) lines.push(`${name}: ${value}`);
  }
  // Asks the server to end after this response. A client that pipelines more requests anyway
  // reaches only the address already checked — no more than a CONNECT to it would allow.
  lines.push("Connection: close");
  return latin1ToBytes(lines.join("\r\n") + "\r\n\r\n");
}

/** What a connection beyond the cap gets, before its request is even read. */
function capReply(maxConnections: number): Uint8Array {
  return textResponse(
    503,
    "Service Unavailable",
    `coop: blocked by sandbox policy: this sandbox already has ${maxConnections} connections ` +
      "open through its proxy, the most it may have at once. Close connections you no longer " +
      "need, or open fewer in parallel, then retry.\n",
    { "Retry-After": "1" },
  );
}

/**
 * Starts a policy proxy on a fresh unix socket in a private directory (socket_dir.ts).
 *
 * @example
 * ```ts
 * const proxy = await startPolicyProxy({ allowDomains: ["example.com", "*.pypi.org"] });
 * // … bind proxy.socketPath into the sandbox, give it proxy.token …
 * await proxy.close();
 * proxy.denials; // [{ host: "evil.example", port: 443, reason: "is not in the allowlist" }]
 * ```
 */
export async function startPolicyProxy(options: PolicyProxyOptions): Promise<PolicyProxy> {
  const allowlist = new Allowlist(options.allowDomains);
  const lib = await loadTrampoline();
  const decideOptions: DecideOptions = {
    resolve: options.resolve ?? systemResolver,
    allowPrivateAddresses: options.allowPrivateAddresses ?? false,
    anyPublic: options.anyPublic ?? false,
    publicForTests: options.publicForTests ?? [],
    neverDial: (options.neverDial ?? []).map(parseSocketAddress),
    // Listed again only after the kernel announced a change (host_network_watch.ts).
    hostNetwork: () => watchedHostNetwork(lib),
  };
  const maxConnections = options.maxConnections ?? DEFAULT_PROXY_MAX_CONNECTIONS;
  const token = randomBytes(24).toString("hex");
  const socketDir = await makeSocketDir(lib);
  const socketPath = socketDir.socketPath;
  const denials: ProxyDenial[] = [];
  let denialCount = 0;
  const handlers = new Set<Promise<void>>();

  const deny = (client: RelayConnection, host: string, port: number, reason: string) => {
    const denial = { host, port, reason };
    denialCount++;
    denials.push(denial);
    if (denials.length > MAX_KEPT_DENIALS) denials.shift();
    options.onDenied?.(denial);
    client.reply(
      textResponse(403, "Blocked by Coop sandbox policy", denialBody(host, port, reason), {
        "X-Coop-Denied": `${host}:${port}`,
      }),
    );
  };

  // The sandbox's stub resolver asks before it hands out an address for a name (RESOLVE
  // name): a name no connection could be allowed to is refused here, never resolved, and the
  // stub answers NXDOMAIN (ATTACKS N4). Nothing is resolved for an allowed name either: the
  // proxy resolves when the command connects.
  const resolveName = (client: RelayConnection, name: string) => {
    const host = normalizeHost(name);
    if (host === null || isIpLiteral(host)) {
      client.reply(textResponse(400, "Bad Request", "coop proxy: RESOLVE needs a host name\n"));
    } else if (decideOptions.anyPublic || allowlist.hasHost(host)) {
      client.reply(textResponse(200, "OK", ""));
    } else {
      deny(client, host, 0, LOOKUP_DENIED);
    }
  };

  // Every path ends in exactly one reply() or a successful dial(): until then the relay holds
  // the connection open.
  const handle = async (client: RelayConnection) => {
    const head = parseRequestHead(bytesToLatin1(client.head.subarray(0, -4)));
    if (!head) {
      client.reply(textResponse(400, "Bad Request", "coop proxy: malformed request\n"));
      return;
    }
    if (!tokenMatches(head, token)) {
      client.reply(
        textResponse(
          407,
          "Proxy Authentication Required",
          "coop proxy: missing or wrong proxy credentials (use this sandbox's HTTP_PROXY)\n",
          { "Proxy-Authenticate": 'Basic realm="coop"' },
        ),
      );
      return;
    }
    if (head.method === "RESOLVE") {
      resolveName(client, head.target);
      return;
    }
    let target: { host: string; port: number } | null;
    let url: URL | undefined;
    if (head.method === "CONNECT") {
      target = parseAuthority(head.target);
    } else {
      try {
        url = new URL(head.target);
      } catch {
        url = undefined;
      }
      target = url?.protocol === "http:" && head.target.startsWith("http://")
        ? { host: url.hostname, port: Number(url.port || 80) }
        : null;
    }
    if (!target) {
      const body = "coop proxy: expected CONNECT host:port or an absolute http:// URL\n";
      client.reply(textResponse(400, "Bad Request", body));
      return;
    }
    const shown = target.host.replace(/^\[(.*)\]$/, "$1");
    const decision = await decide(allowlist, target, decideOptions);
    if ("reason" in decision) {
      deny(client, normalizeHost(target.host) ?? shown, target.port, decision.reason);
      return;
    }
    const connect = head.method === "CONNECT";
    const errno = await client.dial(
      decision.address,
      target.port,
      connect ? latin1ToBytes("HTTP/1.1 200 Connection established\r\n\r\n") : new Uint8Array(),
      connect ? new Uint8Array() : originRequest(head, url!),
    );
    if (errno !== 0) {
      const body = `coop proxy: ${shown}:${target.port} (${decision.address}) did not accept ` +
        `the connection: ${errnoText(errno)}\n`;
      client.reply(textResponse(502, "Bad Gateway", body));
    }
  };

  let relay: Awaited<ReturnType<typeof listenRelay>> | undefined;
  const release = async () => {
    await relay?.close();
    await Promise.allSettled([...handlers]);
    await socketDir.remove();
    options.onClosed?.();
  };
  try {
    relay = await listenRelay(socketPath, {
      onConnection(client) {
        const task = handle(client)
          .catch(() => client.reply(new Uint8Array()))
          .finally(() => handlers.delete(task));
        handlers.add(task);
      },
      maxConnections,
      refusal: capReply(maxConnections),
      onRefused: (total) => total === 1 && options.onCapReached?.(maxConnections),
    });
    await socketDir.handOver(options.socketOwner);
  } catch (error) {
    await release(); // no relay thread, socket or directory outlives a failed start
    throw error;
  }

  let closing: Promise<void> | undefined;
  return {
    socketPath,
    token,
    denials,
    get denialCount() {
      return denialCount;
    },
    get refusedConnections() {
      return relay?.refusedConnections ?? 0;
    },
    async drain() {
      await relay?.drain();
      // Every head has reached onConnection by now: these are all the decisions left.
      await Promise.allSettled([...handlers]);
    },
    close() {
      closing ??= release();
      return closing;
    },
  };
}

/** The `Proxy-Authorization` value for `token` (`Basic` of `coop:<token>`). */
export function proxyAuthorization(token: string): string {
  return `Basic ${btoa(`${PROXY_USER}:${token}`)}`;
}

/** The proxy URL a sandbox uses (`HTTP_PROXY` and friends). */
export function proxyUrl(token: string, port: number): string {
  return `http://${PROXY_USER}:${token}@127.0.0.1:${port}`;
}
