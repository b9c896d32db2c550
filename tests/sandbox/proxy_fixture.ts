/**
 * Fixtures of the network "proxy" tests: an HTTP server on the host's loopback that echoes
 * what it was asked, a raw TCP server that records what reached it, and a resolver the test
 * controls and reads back.
 * @module
 */

/** An HTTP server on `hostname` (default 127.0.0.1) answering `host=<Host header> path=<path>`. */
export function echoServer(hostname = "127.0.0.1"): { port: number; close(): Promise<void> } {
  const server = Deno.serve(
    { hostname, port: 0, onListen() {} },
    (req) => new Response(`host=${req.headers.get("host")} path=${new URL(req.url).pathname}\n`),
  );
  return { port: server.addr.port, close: () => server.shutdown() };
}

/** A TCP server on 127.0.0.1 that keeps every byte it receives and answers `tcp-ok\n` to the
 * first chunk of each connection. */
export function recordingTcpServer(): { port: number; received: () => string; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let received = "";
  const conns = new Set<Deno.Conn>();
  (async () => {
    for await (const conn of listener) {
      conns.add(conn);
      (async () => {
        const buf = new Uint8Array(4096);
        try {
          let answered = false;
          for (;;) {
            const n = await conn.read(buf);
            if (n === null) break;
            received += new TextDecoder().decode(buf.subarray(0, n));
            if (!answered) await conn.write(new TextEncoder().encode("tcp-ok\n"));
            answered = true;
          }
        } catch {
          // closed
        }
        conns.delete(conn);
        try {
          conn.close();
        } catch {
          // closed
        }
      })();
    }
  })().catch(() => {});
  return {
    port: listener.addr.port,
    received: () => received,
    close() {
      listener.close();
      for (const c of conns) c.close();
    },
  };
}

/** A resolver answering from `table` (unknown names: no addresses) that records each query. */
export function recordingResolver(table: Record<string, string[]>) {
  const queries: string[] = [];
  return {
    queries,
    resolve: (name: string) => {
      queries.push(name);
      return Promise.resolve(table[name] ?? []);
    },
  };
}
