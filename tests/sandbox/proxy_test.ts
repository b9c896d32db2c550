// Network "proxy" end to end: curl and python inside a real sandbox, the policy proxy on the
// host, test servers on the host's loopback reached under names a test resolver controls.
// The attack rows (ATTACKS.md N5-N11, N20) are in attacks/network_test.ts.
import {
  exec,
  type ExecResult,
  type ProxyTestHooks,
  SandboxSetupError,
} from "../../src/sandbox/mod.ts";
import { assertEquals, assertMatch, assertNotIncludes, assertRejects } from "../assert.ts";
import { keyValues, python } from "./attacks/attack_table.ts";
import { ownProxyDirs, sandboxTest, withWorkspace } from "./harness.ts";
import { echoServer, recordingResolver, recordingTcpServer } from "./proxy_fixture.ts";
import { withCapturedLogs } from "../fixtures/captured_logs.ts";

/** `sh -c script args…` in a fresh workspace with network "proxy" and these allowed domains. */
function proxySh(
  allowDomains: string[],
  script: string,
  proxy?: ProxyTestHooks,
  args: string[] = [],
): Promise<ExecResult> {
  return withWorkspace((workspace) =>
    exec({ workspace, network: "proxy", allowDomains }, ["sh", "-c", script, ...args], {
      proxy,
      timeoutMs: 20_000,
    })
  );
}

sandboxTest("proxy: an allowed name and port works over plain HTTP and CONNECT", async () => {
  const server = echoServer();
  const { queries, resolve } = recordingResolver({ "allowed.test": ["127.0.0.1"] });
  try {
    const r = await proxySh(
      [`allowed.test:${server.port}`],
      `curl -sS http://allowed.test:${server.port}/plain; echo plain=$?
curl -sS --proxytunnel http://allowed.test:${server.port}/tunnel; echo tunnel=$?`,
      { resolve, allowPrivateAddresses: true },
    );
    assertMatch(r.stdout, new RegExp(`host=allowed.test:${server.port} path=/plain\\nplain=0`));
    assertMatch(r.stdout, /path=\/tunnel\ntunnel=0/);
    assertEquals(r.proxyDenials, []);
    assertEquals(queries, ["allowed.test", "allowed.test"]);
  } finally {
    await server.close();
  }
});

sandboxTest("proxy: a denied name gets the readable 403 and is never resolved", async () => {
  const { queries, resolve } = recordingResolver({ "allowed.test": ["127.0.0.1"] });
  const r = await proxySh(
    ["allowed.test"],
    `curl -sS http://denied.test/x; echo plain=$?
curl -sS https://denied.test/; echo tls=$?`,
    { resolve, allowPrivateAddresses: true },
  );
  assertMatch(
    r.stdout,
    /coop: blocked by sandbox policy: denied\.test:80 is not in the allowlist\. Do not retry via --noproxy/,
  );
  assertMatch(r.stdout, /plain=0/); // curl without -f: a 403 page is a page
  assertMatch(r.stdout, /tls=56/);
  assertMatch(r.stderr, /CONNECT tunnel failed, response 403/);
  assertEquals(r.proxyDenials, [
    { host: "denied.test", port: 80, reason: "is not in the allowlist" },
    { host: "denied.test", port: 443, reason: "is not in the allowlist" },
  ]);
  assertEquals(queries, [], "a name that is not allowed must not be resolved");
});

sandboxTest("proxy: code that ignores the proxy is captured, never routed", async () => {
  const server = echoServer();
  const { resolve } = recordingResolver({ "allowed.test": ["127.0.0.1"] });
  try {
    const r = await proxySh(
      [`allowed.test:${server.port}`],
      `curl -sS -m 5 --noproxy '*' http://allowed.test:${server.port}/captured; echo name=$?
curl -sS -m 5 --noproxy '*' http://127.0.0.1:${server.port}/; echo ip=$?
cat /etc/resolv.conf
${
        python(`
port = int(sys.argv[1])
# Reads the answer: a denial is recorded for each request that reached the proxy, and one
# whose client exits at once may not have left the capture helper before the sandbox ended.
attempt("host_loopback", lambda: print("host_loopback_answer=" + socket.create_connection(
  ("127.0.0.1", port), timeout=5).recv(12).decode(), flush=True))
attempt("public6", lambda: socket.create_connection(("2606:4700:4700::1111", 443), timeout=5))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53)))
attempt("bind", lambda: socket.socket().bind(("127.0.0.1", 8080)))
attempt("forwarder", lambda: socket.create_connection(("127.0.0.1", 3128), timeout=5))`)
      }`,
      { resolve, allowPrivateAddresses: true },
      ["proxy-test", String(server.port)],
    );
    const out = keyValues(r.stdout);
    // Through the stub resolver, the capture listener and the policy proxy.
    assertMatch(r.stdout, new RegExp(`host=allowed.test:${server.port} path=/captured\nname=0`));
    // Loopback is captured too, and 127.0.0.1:port is no entry of the allowlist: the proxy's
    // 403 (curl shows the page), never the host's server.
    assertEquals(out.ip, "0");
    assertMatch(r.stdout, new RegExp(`127\\.0\\.0\\.1:${server.port} is not in the allowlist`));
    assertEquals(out.host_loopback, "OK");
    assertEquals(out.host_loopback_answer, "HTTP/1.1 403", "the proxy's refusal, not the server");
    // IPv6 has no route; UDP is dropped in the output hook; nothing may listen.
    assertEquals(out.public6, "ENETUNREACH");
    assertEquals(out.udp, "EPERM");
    assertEquals(out.bind, "EACCES");
    assertEquals(out.forwarder, "OK");
    assertMatch(r.stdout, /^nameserver 127\.0\.0\.1$/m);
    assertEquals(r.proxyDenials.map((d) => `${d.host}:${d.port} ${d.reason}`), [
      `127.0.0.1:${server.port} is not in the allowlist`,
      `127.0.0.1:${server.port} is not in the allowlist`,
    ]);
  } finally {
    await server.close();
  }
});

sandboxTest(
  "proxy: allowed names resolving to loopback, 10/8 or metadata are refused",
  async () => {
    const tcp = recordingTcpServer();
    const { resolve } = recordingResolver({
      "lo.allowed.test": ["127.0.0.1"],
      "ten.allowed.test": ["10.0.0.7"],
      "meta.allowed.test": ["169.254.169.254"],
    });
    try {
      const r = await proxySh(
        [`*.allowed.test:${tcp.port}`],
        `for n in lo ten meta; do curl -sS -m 5 http://$n.allowed.test:${tcp.port}/; done`,
        { resolve }, // the override stays off: this is production's behaviour
      );
      assertEquals(r.proxyDenials.map((d) => d.host), [
        "lo.allowed.test",
        "ten.allowed.test",
        "meta.allowed.test",
      ]);
      assertMatch(r.proxyDenials[0].reason, /resolves to 127\.0\.0\.1, loopback/);
      assertMatch(r.proxyDenials[1].reason, /resolves to 10\.0\.0\.7, private/);
      assertMatch(r.proxyDenials[2].reason, /169\.254\.169\.254, link-local or cloud metadata/);
      assertEquals(r.stdout.match(/blocked by sandbox policy/g)?.length, 3);
      assertEquals(tcp.received(), "", "the host's loopback server was dialled");
    } finally {
      tcp.close();
    }
  },
);

sandboxTest(
  "proxy: the command cannot signal or trace the forwarder or the capture helpers",
  async () => {
    const r = await proxySh(
      [],
      `ps -eo pid,comm | grep coop-init
for pid in $(ps -eo pid=,comm= | awk '$2 == "coop-init" && $1 != 1 {print $1}'); do
  kill -KILL $pid; echo kill=$?; cat /proc/$pid/mem 2>&1 | head -c 80; echo
done
getent hosts still.there.test; echo getent=$?
${
        python(
          `attempt("forwarder", lambda: socket.create_connection(("127.0.0.1", 3128), timeout=5))
attempt("captured", lambda: socket.create_connection(("192.0.2.1", 80), timeout=5).recv(1))`,
        )
      }`,
    );
    assertMatch(r.stdout, /^\s*2 coop-init$/m);
    // The proxy forwarder, the stub resolver and the capture listener.
    assertEquals(r.stdout.match(/kill=1/g)?.length, 3, r.stdout);
    assertNotIncludes(r.stdout, "kill=0");
    assertMatch(r.stderr, /Operation not permitted/);
    assertMatch(r.stdout, /forwarder=OK/);
    assertMatch(r.stdout, /captured=OK/);
    assertMatch(r.stdout, /getent=2/);
    assertEquals(r.proxyDenials.map((d) => `${d.host}:${d.port}`), [
      "still.there.test:0",
      "192.0.2.1:80",
    ]);
  },
);

sandboxTest("proxy: a failed forwarder setup stops the sandbox and the proxy", async () => {
  const before = ownProxyDirs();
  const error = await assertRejects(
    () =>
      withWorkspace((workspace) =>
        exec({ workspace, network: "proxy" }, ["true"], { failAt: "proxy-forwarder" })
      ),
    SandboxSetupError,
  );
  assertEquals(error.step, "proxy-forwarder");
  const left = ownProxyDirs().filter((name) => !before.includes(name));
  assertEquals(left, [], "the proxy's socket directory was left behind");
});

sandboxTest("proxy: a failed capture setup stops the sandbox, naming the step", async () => {
  for (const network of ["proxy", "public"] as const) {
    const error = await assertRejects(
      () =>
        withWorkspace((workspace) => exec({ workspace, network }, ["true"], { failAt: "capture" })),
      SandboxSetupError,
    );
    assertEquals(error.step, "capture");
  }
});

sandboxTest("proxy: a command refused 500 times logs a few warnings and a total", async () => {
  // One connection at a time, each answer read: every request reaches the proxy, none is
  // refused by the connection cap instead.
  const program = `
import base64, os, socket
credentials = os.environ["HTTP_PROXY"].split("//")[1].split("@")[0]
auth = base64.b64encode(credentials.encode()).decode()
for i in range(500):
    s = socket.create_connection(("127.0.0.1", 3128))
    s.sendall(("CONNECT h%d.test:443 HTTP/1.1\\r\\nProxy-Authorization: Basic %s\\r\\n\\r\\n"
               % (i, auth)).encode())
    assert s.recv(12) == b"HTTP/1.1 403"
    s.close()
print("done")`;
  const { r, records } = await withCapturedLogs(async (records) => ({
    r: await withWorkspace((workspace) =>
      exec({ workspace, network: "proxy", allowDomains: [] }, ["python3", "-c", program], {
        timeoutMs: 60_000,
      })
    ),
    records,
  }));
  assertEquals(r.stdout, "done\n", r.stderr);
  assertEquals(r.proxyDenials.length, 500);
  // Five denials one by one, and the summary of the other 495 once the sandbox ended.
  assertEquals(records.filter((record) => record.level === "warning").length, 6);
  const logged = (event: string) => records.filter((record) => record.properties.event === event);
  assertEquals(
    logged("sandbox.proxy_denied").map((record) => record.properties.host),
    ["h0.test", "h1.test", "h2.test", "h3.test", "h4.test"],
  );
  const summaries = logged("sandbox.proxy_denied.suppressed");
  assertEquals(summaries.map((record) => record.level), ["warning"]);
  assertMatch(summaries[0].message.join(""), /python3: 495 more denials .*\(500 in all\)/);
});
