/**
 * A `Deno.Conn` as a `node:stream` Duplex, so `node:http` can parse a connection that our own
 * accept loop took (see http_server.ts).
 * @module
 */
import { Duplex } from "node:stream";

const READ_SIZE = 16 * 1024;

/**
 * Wraps `conn`; destroying the Duplex closes the connection, ending it half-closes it.
 *
 * @example
 * ```ts
 * const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
 * const socket = connDuplex(await listener.accept());
 * socket.end("bye\n");
 * ```
 */
export function connDuplex(conn: Deno.Conn): Duplex {
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      conn.close();
    } catch {
      // the peer or a failed read closed it already
    }
  };
  return new Duplex({
    read() {
      const buffer = new Uint8Array(READ_SIZE);
      conn.read(buffer).then(
        (n) => this.push(n === null ? null : buffer.subarray(0, n)),
        (error) => this.destroy(error),
      );
    },
    write(chunk: Uint8Array, _encoding, done) {
      writeAll(conn, chunk).then(() => done(), done);
    },
    final(done) {
      conn.closeWrite().then(() => done(), () => done());
    },
    destroy(error, done) {
      close();
      done(error);
    },
  });
}

async function writeAll(conn: Deno.Conn, chunk: Uint8Array): Promise<void> {
  for (let at = 0; at < chunk.length;) at += await conn.write(chunk.subarray(at));
}
