/**
 * The HTTP server against hostile and careless clients, over real loopback sockets: idle and
 * half-sent connections are closed at the head deadline, slow bodies at the request deadline,
 * the connection cap evicts the longest-waiting idle connection (never one with a request in
 * progress), a client that leaves cancels its request, and shutdown waits for replies.
 */
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { type HttpServerLimits, serveHttp } from "../../src/channels/http_server.ts";
import { readUntilClosed } from "../fixtures/read_until_closed.ts";

const LIMITS: HttpServerLimits = {
  headersTimeoutMs: 300,
  requestTimeoutMs: 600,
  maxConnections: 8,
};

function serve(
  handler: (request: Request) => Promise<Response> = () => Promise.resolve(new Response("ok")),
  limits: Partial<HttpServerLimits> = {},
) {
  return serveHttp({ hostname: "127.0.0.1", port: 0, limits: { ...LIMITS, ...limits }, handler });
}

const encoder = new TextEncoder();

/** When each test connection began, before the server could have accepted it. */
const openedAt = new WeakMap<Deno.Conn, number>();

async function connect(port: number, send = ""): Promise<Deno.TcpConn> {
  const before = performance.now();
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  openedAt.set(conn, before);
  if (send) await conn.write(encoder.encode(send));
  return conn;
}

/**
 * Reads until the server closes; the text it sent and how long the connection lived (ms, from
 * before connecting: the server's deadlines start at accept, which cannot be earlier).
 */
async function untilClosed(
  conn: Deno.Conn,
  limitMs = 5_000,
): Promise<{ text: string; ms: number }> {
  const started = openedAt.get(conn) ?? performance.now();
  const timer = setTimeout(() => conn.close(), limitMs);
  const text = await readUntilClosed(conn);
  clearTimeout(timer);
  const ms = performance.now() - started;
  assert(ms < limitMs, `the server did not close the connection within ${limitMs} ms`);
  return { text, ms };
}

/** Sends one request on `conn` and reads one response (the server answers with a length). */
async function roundTrip(conn: Deno.Conn, request: string): Promise<string> {
  await conn.write(encoder.encode(request));
  let text = "";
  const buffer = new Uint8Array(4096);
  while (!/\r\n\r\n/.test(text) || text.length < bodyEnd(text)) {
    const n = await conn.read(buffer);
    if (n === null) break;
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
  return text;
}

function bodyEnd(text: string): number {
  const head = text.indexOf("\r\n\r\n");
  const length = /content-length: (\d+)/i.exec(text)?.[1];
  return head + 4 + Number(length ?? 0);
}

const GET = "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n";

Deno.test("an idle connection and a half-sent request are closed at headers_timeout", async () => {
  const server = serve();
  try {
    const idle = await connect(server.addr.port);
    const half = await connect(server.addr.port, "POST /v1/messages HTTP/1.1\r\nHost: x\r\n");
    const [a, b] = await Promise.all([untilClosed(idle), untilClosed(half)]);
    for (const { ms, text } of [a, b]) {
      assert(ms >= 295 && ms < 3_000, `closed after ${ms} ms, wanted ~300`);
      assertEquals(text, "");
    }
    assertEquals(server.connections(), 0);
  } finally {
    await server.shutdown();
  }
});

Deno.test("a body that trickles in is cut off at request_timeout; a finished one is served", async () => {
  const seen: string[] = [];
  // The head deadline far from the request's: a stalled process reads the head late, and at
  // 300 ms its deadline would close the connection first.
  const server = serve(async (request) => {
    seen.push(await request.text());
    return new Response("done");
  }, { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000 });
  try {
    const slow = await connect(
      server.addr.port,
      "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nstart",
    );
    const { ms } = await untilClosed(slow, 8_000);
    assert(ms >= 1_995 && ms < 6_000, `closed after ${ms} ms, wanted ~2,000`);
    assertEquals(seen, [], "the handler never got a body that did not arrive");
    const whole = await connect(server.addr.port);
    const reply = await roundTrip(
      whole,
      "POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
    );
    assertMatch(reply, /^HTTP\/1.1 200/);
    assertEquals(seen, ["hello"]);
    whole.close();
  } finally {
    await server.shutdown();
  }
});

Deno.test("one request per connection: the reply says Connection: close, then it closes", async () => {
  const server = serve(undefined, { headersTimeoutMs: 10_000, requestTimeoutMs: 10_000 });
  try {
    const conn = await connect(server.addr.port, GET);
    const { text, ms } = await untilClosed(conn);
    assertMatch(text, /^HTTP\/1.1 200[^]*connection: close[^]*ok$/i);
    assert(ms < 5_000, "closed right after the reply, not at the 10 s deadline");
  } finally {
    await server.shutdown();
  }
});

Deno.test("at the cap a new client evicts the longest-waiting idle connection", async () => {
  const server = serve(undefined, { headersTimeoutMs: 10_000, requestTimeoutMs: 10_000 });
  try {
    const idle: Deno.TcpConn[] = [];
    for (let i = 0; i < LIMITS.maxConnections; i++) idle.push(await connect(server.addr.port));
    await waitFor(() => server.connections() === LIMITS.maxConnections);
    const fresh = await connect(server.addr.port);
    assertMatch(await roundTrip(fresh, GET), /^HTTP\/1.1 200/);
    assertEquals((await untilClosed(idle[0], 2_000)).text, "", "the oldest idle one was closed");
    assert(server.connections() <= LIMITS.maxConnections);
    // The next oldest is still there and can still ask (and evicts the next idle one).
    assertMatch(await roundTrip(idle[1], GET), /^HTTP\/1.1 200/);
    for (const c of [fresh, ...idle.slice(1)]) c.close();
  } finally {
    await server.shutdown();
  }
});

Deno.test("requests in progress are never evicted: past the cap a new client is refused", async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => release = resolve);
  let calls = 0;
  const server = serve(async () => {
    calls++;
    await held;
    return new Response("late");
  }, { maxConnections: 2, headersTimeoutMs: 10_000, requestTimeoutMs: 10_000 });
  try {
    const busy = [await connect(server.addr.port, GET), await connect(server.addr.port, GET)];
    await waitFor(() => calls === 2);
    const refused = await connect(server.addr.port, GET);
    const { text } = await untilClosed(refused, 2_000);
    assertEquals(text, "", "closed without an answer");
    release();
    for (const conn of busy) {
      assertMatch(await roundTrip(conn, ""), /^HTTP\/1.1 200[^]*late$/);
      conn.close();
    }
  } finally {
    release();
    await server.shutdown();
  }
});

Deno.test("a client that leaves cancels its request (request.signal aborts)", async () => {
  let aborted: Promise<void> | undefined;
  const server = serve((request) => {
    aborted = new Promise((resolve) => request.signal.addEventListener("abort", () => resolve()));
    return new Promise(() => {});
  });
  try {
    const conn = await connect(server.addr.port, GET);
    await waitFor(() => aborted !== undefined);
    conn.close();
    await aborted;
    await waitFor(() => server.connections() === 0);
  } finally {
    await server.shutdown();
  }
});

Deno.test("shutdown closes idle connections and lets a reply in progress finish", async () => {
  let release = () => {};
  const held = new Promise<void>((resolve) => release = resolve);
  let called = false;
  const server = serve(async () => {
    called = true;
    await held;
    return new Response("finished");
  }, { headersTimeoutMs: 10_000, requestTimeoutMs: 10_000 });
  const idle = await connect(server.addr.port);
  const busy = await connect(server.addr.port, GET);
  await waitFor(() => called && server.connections() === 2);
  const stopped = server.shutdown();
  assertEquals((await untilClosed(idle)).text, "");
  setTimeout(release, 50);
  assertMatch((await untilClosed(busy)).text, /^HTTP\/1.1 200[^]*finished$/);
  await stopped;
  await server.finished;
  const refused = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port })
    .then((c) => (c.close(), false), () => true);
  assert(refused, "no longer listening");
});

Deno.test("a malformed request gets 400 and the connection closes", async () => {
  const server = serve();
  try {
    const conn = await connect(server.addr.port, "NOT HTTP AT ALL\r\n\r\n");
    assertMatch((await untilClosed(conn)).text, /^HTTP\/1.1 400/);
  } finally {
    await server.shutdown();
  }
});

async function waitFor(done: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 5));
  }
}

Deno.test("out of file descriptors: accept failures are logged and survived, fds come back", async () => {
  const fixture = fileURLToPath(new URL("./fixtures/low_fd_server.ts", import.meta.url));
  const child = new Deno.Command("sh", {
    args: [
      "-c",
      'ulimit -n 96 && exec "$0" run --allow-all --no-prompt "$1"',
      Deno.execPath(),
      fixture,
    ],
    env: { NO_COLOR: "1", COOP_LOG: "info" },
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const port = Number((await reader.read()).value?.trim());
  reader.releaseLock();
  const flood: Deno.TcpConn[] = [];
  try {
    assert(port > 0, `the fixture printed no port: ${port > 0 || await stderr}`);
    // More idle clients than the process has descriptors.
    for (let i = 0; i < 150; i++) flood.push(await connect(port));
    // Still answering: each accept that fails frees the longest-idle connection and retries.
    for (let i = 0; i < 3; i++) {
      const conn = await connect(port, GET);
      assertMatch((await untilClosed(conn, 10_000)).text, /^HTTP\/1.1 200[^]*ok$/);
    }
  } finally {
    for (const c of flood) {
      try {
        c.close();
      } catch {
        // closed by the server
      }
    }
  }
  // Descriptors came back: a plain request works once the flood is gone.
  await new Promise((r) => setTimeout(r, 200));
  const after = await connect(port, GET);
  assertMatch((await untilClosed(after, 10_000)).text, /^HTTP\/1.1 200/);
  child.kill("SIGTERM");
  assertEquals((await child.status).code, 0, await stderr);
  await child.stdout.cancel().catch(() => {});
  assertMatch(await stderr, /channel\.http\.accept_failed.*EMFILE/);
});
