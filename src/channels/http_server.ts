/**
 * A small HTTP/1.1 server for Web-standard handlers that survives hostile clients: its own
 * accept loop on `Deno.listen` (running out of file descriptors is logged and waited out, never
 * fatal), a cap on open connections (a new one evicts the connection that has waited longest
 * without a request in progress), and deadlines for the request head and the whole request.
 * Requests are parsed by `node:http` (llhttp), which is handed each accepted connection.
 *
 * Why not `Deno.serve`: it has no header or idle timeouts and ends the process when `accept`
 * fails with EMFILE. Why not `node:http`'s own `listen`: in Deno 2.9 its accept loop stops for
 * good after one EMFILE. Both measured; see docs/decisions.md.
 * @module
 */
import http from "node:http";
import type { Duplex } from "node:stream";
import { getLogger } from "@logtape/logtape";
import { connDuplex } from "./conn_duplex.ts";
import { toWebRequest, writeWebResponse } from "./node_web_adapter.ts";

const log = getLogger(["coop", "channel", "http"]);

/** How long clients may take and how many may be connected at once. */
export interface HttpServerLimits {
  /** A complete request head must arrive within this (ms) from connect or the last response. */
  headersTimeoutMs: number;
  /** The whole request, body included, must arrive within this (ms), counted the same way. */
  requestTimeoutMs: number;
  /** Open connections at most; past it the longest-waiting idle one is closed. */
  maxConnections: number;
}

/** What `serveHttp` needs. */
export interface ServeHttpOptions {
  hostname: string;
  /** 0: any free port. */
  port: number;
  limits: HttpServerLimits;
  handler: (request: Request) => Promise<Response>;
  /** Aborting it shuts the server down (as `shutdown()`). */
  signal?: AbortSignal;
}

/** A running server. */
export interface HttpServer {
  /** The address it listens on (the real port when 0 was asked for). */
  addr: Deno.NetAddr;
  /** Open connections right now (for tests and status). */
  connections(): number;
  /** Stops accepting, closes idle connections, waits for responses in progress, closes all. */
  shutdown(): Promise<void>;
  /** Resolves once shut down. */
  finished: Promise<void>;
}

/** One accepted connection and where it stands. */
interface Connection {
  socket: Duplex;
  /** Requests whose response is not finished yet (pipelining allows more than one). */
  active: Set<AbortController>;
  /** When the connection last began waiting for a request (connect or end of a response). */
  waitingSince: number;
  headTimer?: ReturnType<typeof setTimeout>;
  bodyTimer?: ReturnType<typeof setTimeout>;
}

/** Logs a recurring event at most once a second, with how many were not logged. */
function throttled(event: string): (fields: Record<string, unknown>) => void {
  let last = 0, suppressed = 0;
  return (fields) => {
    const now = Date.now();
    if (now - last < 1000) {
      suppressed++;
      return;
    }
    log.warn(`${event} {reason}`, { event, ...fields, suppressed });
    last = now;
    suppressed = 0;
  };
}

/**
 * Listens on `hostname:port` and serves `handler`; throws what `Deno.listen` throws (e.g.
 * `Deno.errors.AddrInUse`) when the address cannot be bound.
 *
 * @example
 * ```ts
 * const server = serveHttp({
 *   hostname: "127.0.0.1",
 *   port: 0,
 *   limits: { headersTimeoutMs: 10_000, requestTimeoutMs: 30_000, maxConnections: 256 },
 *   handler: () => Promise.resolve(new Response("ok")),
 * });
 * await server.shutdown();
 * ```
 */
export function serveHttp(options: ServeHttpOptions): HttpServer {
  const { limits } = options;
  const listener = Deno.listen({ hostname: options.hostname, port: options.port });
  const addr = listener.addr as Deno.NetAddr;
  const origin = `http://${
    addr.hostname.includes(":") ? `[${addr.hostname}]` : addr.hostname
  }:${addr.port}`;
  const connections = new Map<Duplex, Connection>();
  // Connections with no request in progress, longest-waiting first (Set keeps insertion order).
  const waiting = new Set<Connection>();
  let closing = false;
  let markFinished = () => {};
  const finished = new Promise<void>((resolve) => markFinished = resolve);
  let markAllClosed = () => {};
  const warnAccept = throttled("channel.http.accept_failed");
  const warnFull = throttled("channel.http.connection_refused");
  const noteEvicted = throttled("channel.http.connection_evicted");

  // Node's own timeout checks only run after its listen(); ours are below.
  const server = http.createServer({ requestTimeout: 0, headersTimeout: 0, keepAliveTimeout: 0 });

  const clearTimers = (c: Connection) => {
    clearTimeout(c.headTimer);
    clearTimeout(c.bodyTimer);
    c.headTimer = c.bodyTimer = undefined;
  };
  const startWaiting = (c: Connection) => {
    clearTimers(c);
    c.waitingSince = performance.now();
    waiting.delete(c);
    waiting.add(c);
    // Idle and half-sent alike: no complete head by the deadline closes the connection.
    c.headTimer = setTimeout(() => c.socket.destroy(), limits.headersTimeoutMs);
  };

  const evictOne = (reason: string): boolean => {
    const oldest = waiting.values().next().value;
    if (!oldest) return false;
    noteEvicted({ reason, limit: limits.maxConnections, open: connections.size });
    waiting.delete(oldest);
    oldest.socket.destroy();
    return true;
  };

  const admit = (conn: Deno.Conn) => {
    if (connections.size >= limits.maxConnections && !evictOne("connection limit reached")) {
      warnFull({
        reason: "every connection has a request in progress",
        limit: limits.maxConnections,
      });
      try {
        conn.close();
      } catch {
        // already closed by the peer
      }
      return;
    }
    const socket = connDuplex(conn);
    const c: Connection = { socket, active: new Set(), waitingSince: 0 };
    connections.set(socket, c);
    socket.on("end", () => {
      // The client went away (HTTP/1.1 clients do not half-close while awaiting a reply):
      // cancel what it asked for, as Deno.serve's request.signal did.
      for (const request of c.active) request.abort();
    });
    socket.on("close", () => {
      clearTimers(c);
      waiting.delete(c);
      connections.delete(socket);
      for (const request of c.active) request.abort();
      if (connections.size === 0) markAllClosed();
    });
    startWaiting(c);
    server.emit("connection", socket);
  };

  server.on("request", (req: http.IncomingMessage, res: http.ServerResponse) => {
    const c = connections.get(req.socket as Duplex);
    const abort = new AbortController();
    if (c) {
      waiting.delete(c);
      clearTimers(c);
      c.active.add(abort);
      const left = c.waitingSince + limits.requestTimeoutMs - performance.now();
      // `complete`: every byte of the body has arrived (whether or not the handler read it).
      c.bodyTimer = setTimeout(() => req.complete || c.socket.destroy(), Math.max(0, left));
    }
    res.on("close", () => {
      if (!res.writableFinished) abort.abort();
      if (!c) return;
      c.active.delete(abort);
      if (c.active.size === 0 && !c.socket.destroyed) {
        if (closing) c.socket.destroy();
        else startWaiting(c);
      }
    });
    void respond(req, res, abort.signal);
  });

  const respond = async (
    req: http.IncomingMessage,
    res: http.ServerResponse,
    signal: AbortSignal,
  ) => {
    let request: Request;
    try {
      request = toWebRequest(req, origin, signal);
    } catch {
      // llhttp accepted a header the Fetch standard does not (e.g. a control byte in a value).
      return await writeWebResponse(res, new Response(null, { status: 400 }));
    }
    let response: Response;
    try {
      response = await options.handler(request);
    } catch (error) {
      log.error("channel.http.handler_failed {error}", { error: String(error) });
      response = new Response(null, { status: 500 });
    }
    await writeWebResponse(res, response);
  };

  const accepting = (async () => {
    let pause = 10;
    while (!closing) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (error) {
        if (closing || error instanceof Deno.errors.BadResource) break;
        // EMFILE/ENFILE/ENOBUFS: fail nothing that runs; free an idle connection, wait, retry.
        const code = (error as { code?: string }).code ?? String(error);
        warnAccept({ reason: code, connections: connections.size });
        evictOne(`accept failed: ${code}`);
        await new Promise((resolve) => setTimeout(resolve, pause));
        pause = Math.min(pause * 2, 1000);
        continue;
      }
      pause = 10;
      admit(conn);
    }
  })();

  let stopping: Promise<void> | undefined;
  const shutdown = () =>
    stopping ??= (async () => {
      closing = true;
      try {
        listener.close();
      } catch {
        // already closed
      }
      await accepting;
      const allClosed = new Promise<void>((resolve) => markAllClosed = resolve);
      // Responses in progress finish first (the gateway's drain has cancelled their turns);
      // each connection closes as its last response ends (see the request handler).
      for (const c of connections.values()) if (c.active.size === 0) c.socket.destroy();
      if (connections.size > 0) await allClosed;
      markFinished();
    })();

  options.signal?.addEventListener("abort", () => void shutdown(), { once: true });
  log.info("channel.http.listening {hostname}:{port}", { ...addr, ...limits });
  return { addr, connections: () => connections.size, shutdown, finished };
}
