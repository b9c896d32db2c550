import net from "node:net";
import {
  DEFAULT_PROVIDER_TIMEOUTS,
  defaultDialer,
  type Dialer,
  openRequest,
} from "../../src/agent/http_transport.ts";
import { DRAIN_MS } from "../../src/agent/provider_response.ts";
import { assert, assertEquals, assertRejects } from "../assert.ts";

/** A loopback server answering each connection's requests with `answer` (no request parsing). */
async function withServer(
  answer: (socket: net.Socket, index: number) => void,
  fn: (url: string, requests: () => number) => Promise<void>,
): Promise<void> {
  let requests = 0;
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    // Each request here is one small write: one data event per request.
    socket.on("data", () => answer(socket, requests++));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  try {
    await fn(`http://127.0.0.1:${(server.address() as net.AddressInfo).port}/m`, () => requests);
  } finally {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => server.close(resolve));
  }
}

/** A dialer that keeps every socket it opened. */
function recording(): { dial: Dialer; sockets: net.Socket[] } {
  const sockets: net.Socket[] = [];
  return { dial: (target) => sockets[sockets.push(defaultDialer(target)) - 1], sockets };
}

const open = (url: string, dial: Dialer, signal?: AbortSignal) =>
  openRequest({
    provider: "p",
    url,
    headers: {},
    body: "{}",
    timeouts: DEFAULT_PROVIDER_TIMEOUTS,
    signal,
    dial,
  });

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

Deno.test("a body cancelled before its end is drained, and its connection reused", async () => {
  await withServer((socket) => {
    socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\nstop\r\n");
    setTimeout(() => socket.write("4\r\nmore\r\n0\r\n\r\n"), 30);
  }, async (url) => {
    const { dial, sockets } = recording();
    const first = await open(url, dial);
    assertEquals(new TextDecoder().decode((await first.read())!), "stop");
    await first.cancel();
    const second = await open(url, dial);
    assertEquals(await second.text(), "stopmore");
    assertEquals(sockets.length, 1);
  });
});

Deno.test("a body that does not end within DRAIN_MS closes its connection", async () => {
  await withServer((socket, index) => {
    socket.write("HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n");
    if (index > 0) socket.write("0\r\n\r\n");
  }, async (url) => {
    const { dial, sockets } = recording();
    const first = await open(url, dial);
    await first.read();
    const started = performance.now();
    await first.cancel();
    assert(performance.now() - started >= DRAIN_MS - 50, "waited for the drain");
    assert(sockets[0].destroyed);
    assertEquals(await (await open(url, dial)).text(), "hi");
    assertEquals(sockets.length, 2);
  });
});

Deno.test("a reader behind by more than 64 KiB pauses the connection", async () => {
  const size = 32 * 1024 * 1024;
  await withServer((socket) => {
    socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${size}\r\n\r\n`);
    socket.write(new Uint8Array(size));
  }, async (url) => {
    const { dial, sockets } = recording();
    const response = await open(url, dial);
    await pause(300);
    // Without the pause the whole body would be in memory by now; kernel buffers hold the rest.
    assert(sockets[0].bytesRead < size / 2, `read ahead: ${sockets[0].bytesRead} bytes`);
    let total = 0;
    for (let chunk = await response.read(); chunk; chunk = await response.read()) {
      total += chunk.length;
    }
    assertEquals(total, size);
  });
});

Deno.test("cancelled while waiting for the headers or mid-body: closed, never sent again", async () => {
  await withServer((socket, index) => {
    if (index === 1) socket.write("HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nhalf");
    if (index === 2) socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
  }, async (url, requests) => {
    const { dial, sockets } = recording();
    const waiting = new AbortController();
    const pending = open(url, dial, waiting.signal);
    // Cancel once the server holds the request: a timer alone could fire before it was sent
    // (a stalled process), and the server would then number the next request 0.
    while (requests() < 1) await pause(5);
    waiting.abort(new Error("stop waiting"));
    const waited = await assertRejects(() => pending, Error);
    assertEquals(waited.message, "stop waiting");
    const reading = new AbortController();
    const response = await open(url, dial, reading.signal);
    await response.read();
    reading.abort(new Error("stop reading"));
    const read = await assertRejects(() => response.read(), Error);
    assertEquals(read.message, "stop reading");
    assertEquals(await (await open(url, dial)).text(), "ok");
    await pause(50);
    assertEquals(sockets.length, 3, "each cancelled connection was closed");
    assertEquals(requests(), 3);
  });
});

Deno.test("a kept idle connection does not keep the process alive", async () => {
  await withServer((socket) => {
    socket.write("HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
  }, async (url) => {
    const module = new URL("../../src/agent/http_transport.ts", import.meta.url).href;
    const script = `
      import { openRequest, DEFAULT_PROVIDER_TIMEOUTS } from "${module}";
      const response = await openRequest({ provider: "p", url: "${url}", headers: {}, body: "",
        timeouts: DEFAULT_PROVIDER_TIMEOUTS });
      const text = await response.text();
      const done = performance.now();
      globalThis.addEventListener("unload", () =>
        console.log(text, Math.round(performance.now() - done)));
    `;
    const { success, stdout } = await new Deno.Command(Deno.execPath(), {
      args: ["eval", "--no-check", script],
      stdout: "piped",
    }).output();
    assert(success);
    const [text, lingeredMs] = new TextDecoder().decode(stdout).trim().split(" ");
    assertEquals(text, "ok");
    // Held open, it would exit only when IDLE_CONNECTION_MS (4 s) closes the connection.
    assert(Number(lingeredMs) < 2000, `the process lingered ${lingeredMs} ms`);
  });
});
