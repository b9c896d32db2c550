/**
 * A loopback address that never answers a connect: a listening socket with a backlog of 0
 * whose one queue slot is taken by a connection nobody accepts. Linux then drops every further
 * SYN (the accept queue is full), so the connecting side waits exactly as for a firewalled host.
 * Built with libc through FFI: neither Deno nor `node:net` lets a test choose the backlog or
 * leave a connection unaccepted.
 * @module
 */

const AF_INET = 2;
const SOCK_STREAM = 1;
const SOCK_CLOEXEC = 0o2000000;

/** Runs `fn` with `http://127.0.0.1:<port>` of a black-holed port, closed afterwards. */
export async function withBlackHole(fn: (url: string) => Promise<void>): Promise<void> {
  const libc = Deno.dlopen("libc.so.6", {
    socket: { parameters: ["i32", "i32", "i32"], result: "i32" },
    bind: { parameters: ["i32", "buffer", "u32"], result: "i32" },
    listen: { parameters: ["i32", "i32"], result: "i32" },
    getsockname: { parameters: ["i32", "buffer", "buffer"], result: "i32" },
    close: { parameters: ["i32"], result: "i32" },
  });
  const fd = libc.symbols.socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  let filler: Deno.TcpConn | undefined;
  try {
    if (fd < 0) throw new Error("black hole: socket() failed");
    // struct sockaddr_in: family (host order), port and address (network order), zero pad.
    const address = new Uint8Array(16);
    new DataView(address.buffer).setUint16(0, AF_INET, true);
    address.set([127, 0, 0, 1], 4);
    if (libc.symbols.bind(fd, address, 16) !== 0) throw new Error("black hole: bind() failed");
    if (libc.symbols.listen(fd, 0) !== 0) throw new Error("black hole: listen() failed");
    const length = new Uint32Array([16]);
    libc.symbols.getsockname(fd, address, new Uint8Array(length.buffer));
    const port = new DataView(address.buffer).getUint16(2, false);
    // The kernel completes this one into the empty queue; from now on the queue is full.
    filler = await Deno.connect({ hostname: "127.0.0.1", port });
    await fn(`http://127.0.0.1:${port}`);
  } finally {
    filler?.close();
    if (fd >= 0) libc.symbols.close(fd);
    libc.close();
  }
}
