// The policy proxy on its own, spoken to over its unix socket as the sandbox's forwarder
// would: no sandbox needed.
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { decide, startPolicyProxy } from "../../src/sandbox/proxy/policy_proxy.ts";
import { Allowlist } from "../../src/sandbox/proxy/allowlist.ts";

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

Deno.test("decide: private answers are refused unless the test override is on", async () => {
  const list = new Allowlist(["*.rebind.test", "169.254.169.254"]);
  const { resolve } = recordingResolver({
    "lo.rebind.test": ["127.0.0.1"],
    "ten.rebind.test": ["10.0.0.7"],
    "meta.rebind.test": ["169.254.169.254"],
    "v6.rebind.test": ["::1", "fd00::1"],
    "mixed.rebind.test": ["10.0.0.1", "93.184.216.34"],
  });
  for (const name of ["lo", "ten", "meta", "v6"]) {
    const d = await decide(list, `${name}.rebind.test`, 443, resolve, false);
    assert("reason" in d, name);
    assertMatch(d.reason, /resolves to .*never dials loopback, private, link-local/);
  }
  assertMatch(
    (await decide(list, "169.254.169.254", 80, resolve, false) as { reason: string }).reason,
    /metadata/,
  );
  // The first public answer is pinned; private ones are skipped.
  assertEquals(await decide(list, "mixed.rebind.test", 443, resolve, false), {
    address: "93.184.216.34",
  });
  assertEquals(await decide(list, "lo.rebind.test", 443, resolve, true), { address: "127.0.0.1" });
  assertEquals(await decide(list, "nothing.rebind.test", 443, resolve, false), {
    reason: "could not be resolved",
  });
  assertMatch(
    (await decide(list, "lo.rebind.test", 22, resolve, false) as { reason: string }).reason,
    /port 22/,
  );
});

/** Threads of this process that ffi/relay.c started. */
function relayThreads(): number {
  return [...Deno.readDirSync("/proc/self/task")].filter((task) => {
    try {
      return Deno.readTextFileSync(`/proc/self/task/${task.name}/comm`).trim() === "coop-relay";
    } catch {
      return false; // exited while we looked
    }
  }).length;
}

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
    const tunnel = await Deno.connect({ transport: "unix", path: proxy.socketPath });
    const idle = await Deno.connect({ transport: "unix", path: proxy.socketPath });
    try {
      // The body arrives in the same write as the head: the relay sends it on after the head.
      const body = "x".repeat(100_000);
      const post = await ask(
        proxy.socketPath,
        `POST http://allowed.test:${port}/ HTTP/1.1\r\n${auth(proxy.token)}` +
          `Content-Length: ${body.length}\r\n\r\n${body}`,
      );
      assertMatch(post, /^HTTP\/1\.1 200 [^]*got 100000 bytes$/);
      const refused = await ask(
        proxy.socketPath,
        `CONNECT allowed.test:${closedPort} HTTP/1.1\r\n${auth(proxy.token)}\r\n`,
      );
      assertMatch(refused, /^HTTP\/1\.1 502 [^]*did not accept the connection: connection refused/);
      // An open tunnel and a connection that never finishes its head, both open at close().
      await tunnel.write(
        new TextEncoder().encode(
          `CONNECT allowed.test:${port} HTTP/1.1\r\n${auth(proxy.token)}\r\n`,
        ),
      );
      const established = new Uint8Array(100);
      const n = await tunnel.read(established);
      assertMatch(new TextDecoder().decode(established.subarray(0, n ?? 0)), /^HTTP\/1\.1 200 /);
      await idle.write(new TextEncoder().encode("CONNECT allowed.test"));
      assertEquals(relayThreads(), 3, "an acceptor and one thread per open connection");
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
    assertEquals(relayThreads(), 0, "close() joins every relay thread");
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
    assertEquals(relayThreads(), 0);
  },
});
