// The policy proxy on its own, spoken to over its unix socket as the sandbox's forwarder
// would: no sandbox needed.
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { MAX_KEPT_DENIALS, startPolicyProxy } from "../../src/sandbox/proxy/policy_proxy.ts";
import { decide } from "../../src/sandbox/proxy/proxy_decision.ts";
import { Allowlist } from "../../src/sandbox/proxy/allowlist.ts";
import { parseSocketAddress } from "../../src/sandbox/proxy/address_policy.ts";
import { relayThreads, relayThreadsSettleAt } from "../sandbox/harness.ts";

/** Sends `request` to the proxy and returns everything it answers until it closes. */
async function ask(socketPath: string, request: string): Promise<string> {
  const conn = await Deno.connect({ transport: "unix", path: socketPath });
  await conn.write(new TextEncoder().encode(request));
  let text = "";
  const buf = new Uint8Array(65536);
  for (;;) {
    const n = await conn.read(buf).catch(() => null);
    if (n === null) break;
    text += new TextDecoder().decode(buf.subarray(0, n));
  }
  conn.close();
  return text;
}

const auth = (token: string) => `Proxy-Authorization: Basic ${btoa(`coop:${token}`)}\r\n`;

function recordingResolver(table: Record<string, string[]>) {
  const queries: string[] = [];
  const resolve = (name: string) => {
    queries.push(name);
    return Promise.resolve(table[name] ?? []);
  };
  return { queries, resolve };
}

Deno.test({
  name: "proxy: token, allowlist, addresses; names that are not allowed are never resolved",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      (req) => new Response(`host=${req.headers.get("host")} path=${new URL(req.url).pathname}`),
    );
    const port = server.addr.port;
    const { queries, resolve } = recordingResolver({ "allowed.test": ["127.0.0.1"] });
    const proxy = await startPolicyProxy({
      allowDomains: [`allowed.test:${port}`],
      resolve,
      allowPrivateAddresses: true,
    });
    const other = await startPolicyProxy({ allowDomains: [`allowed.test:${port}`], resolve });
    try {
      assertEquals((await Deno.stat(proxy.socketPath)).mode! & 0o777, 0o600);
      const get = `GET http://allowed.test:${port}/p?q=1 HTTP/1.1\r\nHost: evil.test\r\n`;
      // Without credentials, or with another proxy's token: 407, nothing resolved.
      assertMatch(await ask(proxy.socketPath, `${get}\r\n`), /^HTTP\/1\.1 407 /);
      assertMatch(
        await ask(proxy.socketPath, `${get}${auth(other.token)}\r\n`),
        /^HTTP\/1\.1 407 /,
      );
      assertEquals(queries, []);
      // Allowed: forwarded in origin form, with Host set to the checked authority.
      const ok = await ask(proxy.socketPath, `${get}${auth(proxy.token)}\r\n`);
      assertMatch(ok, /^HTTP\/1\.1 200 /);
      assertMatch(ok, new RegExp(`host=allowed.test:${port} path=/p$`));
      // Denied by name: 403 with the readable reason, and no resolution.
      const denied = await ask(
        proxy.socketPath,
        `CONNECT evil.test:443 HTTP/1.1\r\n${auth(proxy.token)}\r\n`,
      );
      assertMatch(denied, /^HTTP\/1\.1 403 /);
      assertMatch(
        denied,
        /coop: blocked by sandbox policy: evil\.test:443 is not in the allowlist/,
      );
      assertMatch(denied, /do not retry via --noproxy/i);
      assertEquals(queries, ["allowed.test"]);
      assertEquals(proxy.denials, [{
        host: "evil.test",
        port: 443,
        reason: "is not in the allowlist",
      }]);
      // A CONNECT tunnel to the allowed authority carries any bytes.
      const tunnel = await ask(
        proxy.socketPath,
        `CONNECT allowed.test:${port} HTTP/1.1\r\n${auth(proxy.token)}\r\n` +
          `GET /t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`,
      );
      assertMatch(tunnel, /^HTTP\/1\.1 200 Connection established\r\n\r\nHTTP\/1\.1 200 /);
      assertMatch(tunnel, /host=x path=\/t$/);
      // Origin-form requests (not meant for a proxy) are refused.
      assertMatch(
        await ask(proxy.socketPath, `GET / HTTP/1.1\r\n${auth(proxy.token)}\r\n`),
        /^HTTP\/1\.1 400 /,
      );
    } finally {
      await proxy.close();
      await other.close();
      await server.shutdown();
    }
    assert(!(await Deno.stat(proxy.socketPath).catch(() => null)), "socket removed on close");
  },
});

const NO_INTERFACES = { interfaces: [] };

Deno.test("decide: private answers are refused unless the test override is on", async () => {
  const list = new Allowlist(["*.rebind.test", "169.254.169.254"]);
  const { resolve } = recordingResolver({
    "lo.rebind.test": ["127.0.0.1"],
    "ten.rebind.test": ["10.0.0.7"],
    "meta.rebind.test": ["169.254.169.254"],
    "v6.rebind.test": ["::1", "fd00::1"],
    "mixed.rebind.test": ["10.0.0.1", "93.184.216.34"],
    "mapped.rebind.test": ["::ffff:93.184.216.34"],
  });
  const options = { resolve, hostNetwork: () => NO_INTERFACES };
  const at = (host: string, port = 443) => ({ host, port });
  for (const name of ["lo", "ten", "meta", "v6"]) {
    const d = await decide(list, at(`${name}.rebind.test`), options);
    assert("reason" in d, name);
    assertMatch(d.reason, /resolves to .*the proxy dials only public addresses for a name/);
  }
  assertMatch(
    (await decide(list, at("169.254.169.254", 80), options) as { reason: string }).reason,
    /metadata .*never dials, not even for an IP-literal entry/,
  );
  // The first public answer is pinned; private ones are skipped.
  assertEquals(await decide(list, at("mixed.rebind.test"), options), {
    address: "93.184.216.34",
  });
  // An embedded IPv4 address is dialed as IPv4.
  assertEquals(await decide(list, at("mapped.rebind.test"), options), {
    address: "93.184.216.34",
  });
  assertEquals(
    await decide(list, at("lo.rebind.test"), { ...options, allowPrivateAddresses: true }),
    { address: "127.0.0.1" },
  );
  assertEquals(await decide(list, at("nothing.rebind.test"), options), {
    reason: "could not be resolved",
  });
  assertMatch(
    (await decide(list, at("lo.rebind.test", 22), options) as { reason: string }).reason,
    /port 22/,
  );
});

Deno.test("decide: an IP-literal entry consents to that address; a name never does", async () => {
  const list = new Allowlist(["10.0.0.5:8080", "[fd00::5]:443", "svc.test:8080", "127.0.0.1:8787"]);
  const { resolve, queries } = recordingResolver({ "svc.test": ["10.0.0.5"] });
  const options = {
    resolve,
    hostNetwork: () => NO_INTERFACES,
    neverDial: [parseSocketAddress("127.0.0.1:8787")],
  };
  assertEquals(await decide(list, { host: "10.0.0.5", port: 8080 }, options), {
    address: "10.0.0.5",
  });
  assertEquals(await decide(list, { host: "[::ffff:10.0.0.5]", port: 8080 }, options), {
    address: "10.0.0.5",
  });
  assertEquals(await decide(list, { host: "[FD00::5]", port: 443 }, options), {
    address: "fd00::5",
  });
  const byName = await decide(list, { host: "svc.test", port: 8080 }, options);
  assertEquals(byName, {
    reason: "resolves to 10.0.0.5, private (10.0.0.0/8); the proxy dials only public " +
      "addresses for a name; an owner can allow one private service by its address, with an " +
      "IP-literal entry such as 10.0.0.5:8080",
  });
  assertEquals(queries, ["svc.test"]);
  const gateway = await decide(list, { host: "127.0.0.1", port: 8787 }, options);
  assertMatch((gateway as { reason: string }).reason, /a socket of the Coop gateway itself/);
  assertEquals(await decide(list, { host: "10.0.0.05", port: 8080 }, options), {
    reason: "is not a valid IP address",
  });
  // No interface list, no decision: fail closed.
  const blind = await decide(list, { host: "10.0.0.5", port: 8080 }, {
    ...options,
    hostNetwork: () => {
      throw new Error("EPERM");
    },
  });
  assertMatch((blind as { reason: string }).reason, /could not list this host's network/);
});

Deno.test({
  name: "proxy: bodies after the head, 502 on a refused connect, close ends every connection",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen() {} },
      async (req) => new Response(`got ${(await req.arrayBuffer()).byteLength} bytes`),
    );
    const port = server.addr.port;
    const closedPort = (() => {
      const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      l.close();
      return l.addr.port;
    })();
    const proxy = await startPolicyProxy({
      allowDomains: [`allowed.test:${port}`, `allowed.test:${closedPort}`],
      resolve: () => Promise.resolve(["127.0.0.1"]),
      allowPrivateAddresses: true,
    });
    // Connected first: the acceptor takes connections in order (the listen queue is FIFO), so
    // each of these has its thread before any later connection is answered.
    const tunnel = await Deno.connect({ transport: "unix", path: proxy.socketPath });
    const idle = await Deno.connect({ transport: "unix", path: proxy.socketPath });
    const ended = await Deno.connect({ transport: "unix", path: proxy.socketPath });
    const encoder = new TextEncoder();
    const established = async (conn: Deno.UnixConn) => {
      await conn.write(
        encoder.encode(`CONNECT allowed.test:${port} HTTP/1.1\r\n${auth(proxy.token)}\r\n`),
      );
      const answer = new Uint8Array(100);
      const n = await conn.read(answer);
      assertMatch(new TextDecoder().decode(answer.subarray(0, n ?? 0)), /^HTTP\/1\.1 200 /);
    };
    try {
      // A connection the proxy ends itself (its reply) is closed only after its thread was
      // joined: when ask() has read the end, that thread is gone.
      const refused = await ask(
        proxy.socketPath,
        `CONNECT allowed.test:${closedPort} HTTP/1.1\r\n${auth(proxy.token)}\r\n`,
      );
      assertMatch(refused, /^HTTP\/1\.1 502 [^]*did not accept the connection: connection refused/);
      // A relayed connection the client ends first: the relay's last end (the upstream's) comes
      // after the join, so reading it means that thread is gone too.
      await established(ended);
      await ended.closeWrite();
      assertEquals(await ended.read(new Uint8Array(10)), null);
      ended.close();
      // An open tunnel and a connection that never finishes its head, both open at close().
      await established(tunnel);
      await idle.write(encoder.encode("CONNECT allowed.test"));
      assert(
        await relayThreadsSettleAt(3),
        `an acceptor and one thread per open connection: ${relayThreads()}`,
      );
      // The body arrives in the same write as the head: the relay sends it on after the head.
      const body = "x".repeat(100_000);
      const post = await ask(
        proxy.socketPath,
        `POST http://allowed.test:${port}/ HTTP/1.1\r\n${auth(proxy.token)}` +
          `Content-Length: ${body.length}\r\n\r\n${body}`,
      );
      assertMatch(post, /^HTTP\/1\.1 200 [^]*got 100000 bytes$/);
    } finally {
      await proxy.close();
      await server.shutdown();
    }
    // Both connections were closed by the proxy: the client reads EOF. The idle one may see
    // ECONNRESET instead: AF_UNIX resets the peer of a socket closed with unread data
    // (unix_release_sock), which is the case when close() comes before the relay thread has
    // read the partial head — under load it often does.
    assertEquals(await tunnel.read(new Uint8Array(10)), null);
    const idleEnd = await idle.read(new Uint8Array(10)).catch((e: unknown) =>
      e instanceof Deno.errors.ConnectionReset ? "reset" : Promise.reject(e)
    );
    assert(idleEnd === null || idleEnd === "reset", `the idle connection read ${idleEnd}`);
    tunnel.close();
    idle.close();
    assert(await relayThreadsSettleAt(0), `close() joins every relay thread: ${relayThreads()}`);
  },
});

Deno.test({
  name: "proxy: close() while a decision is pending; the late answer never reaches the freed relay",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    let answer: (addresses: string[]) => void = () => {};
    let asked: () => void = () => {};
    const resolving = new Promise<void>((resolve) => (asked = resolve));
    const proxy = await startPolicyProxy({
      allowDomains: ["slow.test"],
      resolve: () => {
        asked();
        return new Promise((resolve) => (answer = resolve));
      },
      allowPrivateAddresses: true,
    });
    const reply = ask(
      proxy.socketPath,
      `CONNECT slow.test:443 HTTP/1.1\r\n${auth(proxy.token)}\r\n`,
    );
    await resolving;
    // close() must wait for the pending handler, not free the relay under it.
    const closing = proxy.close();
    answer(["127.0.0.1"]);
    await closing;
    assertEquals(await reply, "", "the connection was ended without an answer");
    assert(await relayThreadsSettleAt(0), `relay threads: ${relayThreads()}`);
  },
});

Deno.test({
  name: "proxy: past maxConnections open at once, a 503 and close — no thread, no fd kept",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const capReached: number[] = [];
    const proxy = await startPolicyProxy({
      allowDomains: [],
      maxConnections: 8,
      onCapReached: (max) => capReached.push(max),
    });
    const conns: Deno.UnixConn[] = [];
    try {
      // Connections that never send a head hold their slot (up to the 30 s head timeout).
      while (conns.length < 200) {
        try {
          conns.push(await Deno.connect({ transport: "unix", path: proxy.socketPath }));
        } catch (error) {
          // Deno connects without blocking: a full backlog is EAGAIN until the acceptor drains.
          if (!(error instanceof Deno.errors.WouldBlock)) throw error;
          await new Promise((r) => setTimeout(r, 5));
        }
      }
      const answers = await Promise.all(
        conns.slice(8).map(async (conn) => {
          const buf = new Uint8Array(1024);
          let text = "";
          for (;;) {
            const n = await conn.read(buf);
            if (n === null) return text;
            text += new TextDecoder().decode(buf.subarray(0, n));
          }
        }),
      );
      for (const answer of answers) {
        assertMatch(answer, /^HTTP\/1\.1 503 Service Unavailable\r\n/);
        assertMatch(answer, /this sandbox already has 8 connections open through its proxy/);
      }
      assert(
        await relayThreadsSettleAt(1 + 8),
        `the acceptor and one thread per admitted connection: ${relayThreads()}`,
      );
      // The count arrives on the relay's event pipe, just after the client's 503.
      for (let i = 0; i < 100 && proxy.refusedConnections < 192; i++) {
        await new Promise((r) => setTimeout(r, 10));
      }
      assertEquals(proxy.refusedConnections, 192);
      assertEquals(capReached, [8], "reported once");
      // A slot frees when a connection ends: the next one is admitted again.
      conns[0].close();
      conns.shift();
      let admitted = false;
      for (let i = 0; i < 50 && !admitted; i++) {
        await new Promise((r) => setTimeout(r, 20));
        const conn = await Deno.connect({ transport: "unix", path: proxy.socketPath });
        await conn.write(new TextEncoder().encode("CONNECT x.test:443 HTTP/1.1\r\n\r\n"));
        const buf = new Uint8Array(64);
        const n = await conn.read(buf);
        admitted = /^HTTP\/1\.1 407 /.test(new TextDecoder().decode(buf.subarray(0, n ?? 0)));
        conn.close();
      }
      assert(admitted, "a freed slot admits a new connection");
    } finally {
      for (const conn of conns) conn.close();
      await proxy.close();
    }
    assert(await relayThreadsSettleAt(0), `relay threads: ${relayThreads()}`);
  },
});

Deno.test("decide: network public allows any name and port, public unicast addresses only", async () => {
  const list = new Allowlist([]);
  const { resolve } = recordingResolver({
    "pub.test": ["93.184.216.34"],
    "ten.test": ["10.0.0.7"],
    "mixed.test": ["192.168.1.5", "93.184.216.34"],
    "lo.test": ["127.0.0.1"],
  });
  const options = { resolve, hostNetwork: () => NO_INTERFACES, anyPublic: true };
  assertEquals(await decide(list, { host: "pub.test", port: 22 }, options), {
    address: "93.184.216.34",
  });
  assertEquals(await decide(list, { host: "mixed.test", port: 8443 }, options), {
    address: "93.184.216.34",
  });
  assertEquals(await decide(list, { host: "93.184.216.34", port: 9 }, options), {
    address: "93.184.216.34",
  });
  assertEquals(await decide(list, { host: "ten.test", port: 80 }, options), {
    reason: 'resolves to 10.0.0.7, private (10.0.0.0/8); network "public" reaches public ' +
      "unicast addresses only",
  });
  // An IP literal is no consent here.
  for (const host of ["10.0.0.7", "127.0.0.1", "169.254.169.254", "[::1]", "100.64.0.1"]) {
    const d = await decide(list, { host, port: 80 }, options);
    assert("reason" in d, host);
  }
  // The test hook makes exactly the listed addresses public; others stay refused.
  const hooked = { ...options, publicForTests: ["127.0.0.1"] };
  assertEquals(await decide(list, { host: "lo.test", port: 80 }, hooked), {
    address: "127.0.0.1",
  });
  assert("reason" in await decide(list, { host: "ten.test", port: 80 }, hooked));
  // … and never lifts what is never dialed (metadata, the gateway's own sockets).
  const metadata = { ...hooked, publicForTests: ["169.254.169.254"] };
  assert("reason" in await decide(list, { host: "169.254.169.254", port: 80 }, metadata));
});

Deno.test({
  name: "proxy: RESOLVE answers 200 for allowed names, 403 (recorded) for others, never resolves",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const { queries, resolve } = recordingResolver({ "allowed.test": ["127.0.0.1"] });
    const proxy = await startPolicyProxy({
      allowDomains: ["allowed.test", "*.wild.test"],
      resolve,
    });
    const open = await startPolicyProxy({ allowDomains: [], resolve, anyPublic: true });
    try {
      const lookup = (p: typeof proxy, name: string, token = p.token) =>
        ask(p.socketPath, `RESOLVE ${name} HTTP/1.1\r\n${auth(token)}\r\n`);
      assertMatch(await lookup(proxy, "allowed.test"), /^HTTP\/1\.1 200 /);
      assertMatch(await lookup(proxy, "a.wild.test"), /^HTTP\/1\.1 200 /);
      assertMatch(await lookup(proxy, "evil.test"), /^HTTP\/1\.1 403 /);
      assertMatch(await lookup(proxy, "10.0.0.1"), /^HTTP\/1\.1 400 /);
      assertMatch(await lookup(proxy, "allowed.test", open.token), /^HTTP\/1\.1 407 /);
      assertEquals(proxy.denials, [{
        host: "evil.test",
        port: 0,
        reason: "is not in the allowlist: the sandbox's resolver answered NXDOMAIN, and the " +
          "name was never looked up outside",
      }]);
      // Network "public": every host name may be looked up (and is resolved only on connect).
      assertMatch(await lookup(open, "anything.example"), /^HTTP\/1\.1 200 /);
      assertEquals(queries, [], "RESOLVE never resolves");
    } finally {
      await proxy.close();
      await open.close();
    }
  },
});

Deno.test({
  name: "proxy: a sandbox refused without end keeps the latest denials only, and all are counted",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const proxy = await startPolicyProxy({ allowDomains: ["allowed.test"] });
    try {
      const total = MAX_KEPT_DENIALS + 5;
      for (let i = 0; i < total; i++) {
        const connect = `CONNECT h${i}.test:443 HTTP/1.1\r\n${auth(proxy.token)}\r\n`;
        assertMatch(await ask(proxy.socketPath, connect), /^HTTP\/1\.1 403 /);
      }
      assertEquals(proxy.denialCount, total);
      assertEquals(proxy.denials.length, MAX_KEPT_DENIALS);
      assertEquals(proxy.denials[0].host, "h5.test");
      assertEquals(proxy.denials.at(-1)!.host, `h${total - 1}.test`);
    } finally {
      await proxy.close();
    }
  },
});

Deno.test({
  name: "proxy: onClosed comes once, after the last decision, even one pending at close()",
  sanitizeResources: false,
  sanitizeOps: false,
  async fn() {
    const events: string[] = [];
    const answer = Promise.withResolvers<string[]>();
    const asked = Promise.withResolvers<void>();
    const proxy = await startPolicyProxy({
      allowDomains: ["slow.test"],
      resolve: () => {
        asked.resolve();
        return answer.promise;
      },
      onDenied: (denial) => events.push(`denied ${denial.host}`),
      onClosed: () => events.push("closed"),
    });
    await ask(proxy.socketPath, `CONNECT evil.test:443 HTTP/1.1\r\n${auth(proxy.token)}\r\n`);
    const pending = ask(
      proxy.socketPath,
      `CONNECT slow.test:443 HTTP/1.1\r\n${auth(proxy.token)}\r\n`,
    );
    await asked.promise;
    const closed = proxy.close();
    answer.resolve(["10.0.0.7"]); // private: refused
    await closed;
    await proxy.close();
    await pending;
    assertEquals(events, ["denied evil.test", "denied slow.test", "closed"]);
  },
});
