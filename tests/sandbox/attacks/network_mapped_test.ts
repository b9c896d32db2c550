// ATTACKS.md §4.2 N21 and N22 and §4.5 R11 — the policy proxy against mapped and translated
// addresses, this machine's own addresses and on-link neighbours, the owner's IP-literal
// consent, and a flood of connections. Run from inside a real sandbox with network "proxy";
// the proxy's private-address test override stays off in every row, as in production.
import { hostNetwork } from "../../../src/sandbox/mod.ts";
import type { IpAddress } from "../../../src/sandbox/proxy/address_policy.ts";
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { fdsAndThreads, relayThreads, relayThreadsSettleAt } from "../harness.ts";
import { echoServer, recordingResolver } from "../proxy_fixture.ts";
import { type Attack, attackSuite, keyValues, python } from "./attack_table.ts";

const PROXY = { network: "proxy" as const };

/** This machine's first IPv4 and first non-link-local IPv6 interface, as the proxy sees them. */
const interfaces = hostNetwork().interfaces;
const ownV4 = interfaces.find((i) => i.address.kind() === "ipv4");
const ownV6 = interfaces.find((i) =>
  i.address.kind() === "ipv6" && i.address.range() !== "linkLocal"
);
const NO_V4 = "this machine has no non-loopback IPv4 address to attack through";

const hex16 = (bytes: number[], at: number) => ((bytes[at] << 8) | bytes[at + 1]).toString(16);
const escape = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

/** Another address on the same subnet as `own` (its on-link neighbour), or null for a /31+. */
function neighbour(own: { address: IpAddress; prefixLength: number }): string | null {
  const bytes = own.address.toByteArray();
  const hostBits = bytes.length * 8 - own.prefixLength;
  if (hostBits < 2) return null;
  const last = bytes.length - 1;
  // Flip the lowest host bits that keep us inside the subnet and off the own address.
  const flip = hostBits >= 8 ? 0x4d : (1 << (hostBits - 1));
  const out = [...bytes];
  out[last] = (bytes[last] ^ flip) || 1;
  const group = (i: number) => ((out[i] << 8) | out[i + 1]).toString(16);
  return own.address.kind() === "ipv4"
    ? out.join(".")
    : Array.from({ length: 8 }, (_, i) => group(2 * i)).join(":");
}

/** `own`'s IPv4 subnet as the proxy names it, e.g. `192.0.2.0/24`. */
function networkOf(own: { address: IpAddress; prefixLength: number }): string {
  const bytes = own.address.toByteArray().map((byte, i) => {
    const keep = Math.max(0, Math.min(8, own.prefixLength - 8 * i));
    return byte & (0xff << (8 - keep)) & 0xff;
  });
  return `${bytes.join(".")}/${own.prefixLength}`;
}

/** N21: an allowed name whose AAAA embeds this host's IPv4 address, or a private one. */
function mappedAndTranslated(): Attack {
  if (!ownV4) {
    return { id: "N21", name: "mapped and translated addresses", waitsFor: NO_V4, expect() {} };
  }
  const ip = ownV4.address.toString();
  const bytes = ownV4.address.toByteArray();
  const hi = hex16(bytes, 0), lo = hex16(bytes, 2);
  const own = `an address of the Coop host itself \\(${escape(ownV4.name)}\\)`;
  const privateOr = (range: string) => `(${range}|on-link: in .*)`;
  const cases: Record<string, [string, string]> = {
    mapped: [`::ffff:${ip}`, `\\(= ${escape(ip)}, IPv4-mapped, ::ffff:0:0/96\\), ${own}`],
    mappedhex: [`::ffff:${hi}:${lo}`, `\\(= ${escape(ip)}, IPv4-mapped, ::ffff:0:0/96\\), ${own}`],
    compat: [`::${hi}:${lo}`, `\\(= ${escape(ip)}, IPv4-compatible, ::/96\\), ${own}`],
    hostsixtofour: [`2002:${hi}:${lo}::1`, `\\(= ${escape(ip)}, 6to4, 2002::/16\\), ${own}`],
    nat64: ["64:ff9b::7f00:1", "\\(= 127\\.0\\.0\\.1, NAT64, 64:ff9b::/96\\), loopback"],
    localnat64: [
      "64:ff9b:1::10.0.0.5",
      `\\(= 10\\.0\\.0\\.5, local-use NAT64, 64:ff9b:1::/48\\), ${
        privateOr("private \\(10\\.0\\.0\\.0/8\\)")
      }`,
    ],
    siit: [
      "::ffff:0:192.168.1.1",
      `\\(= 192\\.168\\.1\\.1, SIIT, ::ffff:0:0:0/96\\), ${
        privateOr("private \\(192\\.168\\.0\\.0/16\\)")
      }`,
    ],
    sixtofour: [
      "2002:a9fe:a9fe::1",
      "\\(= 169\\.254\\.169\\.254, 6to4, 2002::/16\\), link-local or cloud metadata",
    ],
  };
  const dns = recordingResolver(
    Object.fromEntries(
      Object.entries(cases).map(([label, [aaaa]]) => [`${label}.n21.test`, [aaaa]]),
    ),
  );
  // A server on this host's own address: had the relay dialed any mapped form, it lands here.
  let listener: Deno.Listener | undefined;
  let reached = 0;
  return {
    id: "N21",
    name: "mapped and translated addresses of this host and of private ranges",
    needs: ["curl"],
    prepare: () => {
      listener = Deno.listen({ hostname: ip, port: 0 });
      (async () => {
        for await (const conn of listener!) {
          reached++;
          conn.close();
        }
      })().catch(() => {});
      return String((listener.addr as Deno.NetAddr).port);
    },
    policy: (port) => ({ ...PROXY, allowDomains: [`*.n21.test:${port}`] }),
    options: { proxy: { resolve: dns.resolve } },
    script: `for n in ${Object.keys(cases).join(" ")}; do
  curl -sS -m 5 http://$n.n21.test:$1/; echo $n=$?
done`,
    expect: (r, _ws, port) => {
      const out = keyValues(r.stdout);
      assertEquals(r.proxyDenials.length, Object.keys(cases).length, r.stdout + r.stderr);
      for (const [i, [label, [aaaa, why]]] of Object.entries(cases).entries()) {
        assertEquals(out[label], "0", `${label}: curl got the proxy's 403 page`);
        const denial = r.proxyDenials[i];
        assertEquals(`${denial.host}:${denial.port}`, `${label}.n21.test:${port}`);
        assertMatch(denial.reason, new RegExp(`^resolves to ${escape(aaaa)} ${why}`), label);
      }
      assertEquals(r.stdout.match(/blocked by sandbox policy/g)?.length, 8);
      assertEquals(reached, 0, "the relay never connected to this host's own address");
    },
    teardown: () => listener?.close(),
  };
}

/** N22: names resolving into this host's subnets stay refused; an IP-literal entry consents. */
function onLinkNeighbours(): Attack {
  if (!ownV4) return { id: "N22", name: "on-link neighbours", waitsFor: NO_V4, expect() {} };
  const ip = ownV4.address.toString();
  const names: Record<string, string> = { self: ip };
  const near = neighbour(ownV4);
  if (near) names.neighbour = near;
  const near6 = ownV6 ? neighbour(ownV6) : null;
  if (near6) names.neighbour6 = near6;
  const dns = recordingResolver(
    Object.fromEntries(Object.entries(names).map(([label, a]) => [`${label}.n22.test`, [a]])),
  );
  let server: ReturnType<typeof echoServer> | undefined;
  return {
    id: "N22",
    name: "on-link neighbours refused for a name; an IP-literal entry consents",
    needs: ["curl"],
    // A service on this host's LAN address, standing for the owner's LAN service.
    prepare: () => String((server = echoServer(ip)).port),
    policy: (port) => ({ ...PROXY, allowDomains: [`${ip}:${port}`, `*.n22.test:${port}`] }),
    options: { proxy: { resolve: dns.resolve } },
    script: `curl -sS -m 5 http://${ip}:$1/consent; echo literal=$?
curl -sS -m 5 'http://[::ffff:${ip}]:'$1/mapped; echo mapped=$?
for n in ${Object.keys(names).join(" ")}; do
  curl -sS -m 5 -o /dev/null -w "$n=%{http_code}\\n" http://$n.n22.test:$1/
done`,
    expect: (r, _ws, port) => {
      const out = keyValues(r.stdout);
      // The consent entry: exactly that address and port, compared parsed.
      assertEquals(out.literal, "0");
      assertMatch(r.stdout, new RegExp(`^host=${escape(ip)}:${port} path=/consent$`, "m"));
      assertEquals(out.mapped, "0");
      assertMatch(r.stdout, /path=\/mapped$/m);
      // The same address, and its neighbours, by name: refused.
      for (const label of Object.keys(names)) assertEquals(out[label], "403", label);
      const reasons = Object.fromEntries(
        r.proxyDenials.map((d) => [d.host.split(".")[0], d.reason]),
      );
      assertEquals(Object.keys(reasons), Object.keys(names));
      assertMatch(
        reasons.self,
        new RegExp(`^resolves to ${escape(ip)}, an address of the Coop host itself`),
      );
      if (near) {
        assertMatch(
          reasons.neighbour,
          new RegExp(
            `^resolves to ${escape(near)}, on-link: in ${escape(networkOf(ownV4))}, a subnet ` +
              `of the Coop host \\(${escape(ownV4.name)}\\)`,
          ),
        );
      }
      if (near6) assertMatch(reasons.neighbour6, /^resolves to .*, on-link: in .*, a subnet/);
      assertEquals(dns.queries.sort(), Object.keys(names).map((l) => `${l}.n22.test`).sort());
    },
    teardown: () => server?.close(),
  };
}

/** N9 with consent: an owner's entry reaches one host service, never the gateway's socket. */
function consentNeverGateway(): Attack {
  const dns = recordingResolver({ "model.test": ["127.0.0.1"] });
  let model: ReturnType<typeof echoServer> | undefined;
  let gateway: ReturnType<typeof echoServer> | undefined;
  return {
    id: "N9-consent",
    name: "a consented host service is reachable; the gateway's own socket never is",
    needs: ["curl"],
    prepare: () => {
      model = echoServer();
      gateway = echoServer();
      return `${model.port} ${gateway.port}`;
    },
    policy: (ports) => {
      const [m, g] = ports.split(" ");
      return {
        ...PROXY,
        allowDomains: [`127.0.0.1:${m}`, `127.0.0.1:${g}`, `model.test:${m}`],
        proxyNeverDial: [`127.0.0.1:${g}`],
      };
    },
    options: { proxy: { resolve: dns.resolve } },
    script: `set -- $1
curl -sS -o /dev/null -w 'model=%{http_code}\\n' http://127.0.0.1:$1/v1/models
curl -sS -o /dev/null -w 'gateway=%{http_code}\\n' http://127.0.0.1:$2/v1/messages
curl -sS -o /dev/null -w 'gateway_mapped=%{http_code}\\n' 'http://[::ffff:7f00:1]:'$2/
curl -sS -o /dev/null -w 'by_name=%{http_code}\\n' http://model.test:$1/`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals(out.model, "200");
      assertEquals(out.gateway, "403");
      assertEquals(out.gateway_mapped, "403");
      assertEquals(out.by_name, "403");
      const reasons = r.proxyDenials.map((d) => d.reason);
      assertMatch(reasons[0], /a socket of the Coop gateway itself; .*not even for an IP-literal/);
      assertMatch(reasons[1], /\(= 127\.0\.0\.1, IPv4-mapped.*a socket of the Coop gateway/);
      assertMatch(
        reasons[2],
        /^resolves to 127\.0\.0\.1, loopback \(127\.0\.0\.0\/8\); the proxy dials only public addresses for a name/,
      );
    },
    teardown: async () => {
      await model?.close();
      await gateway?.close();
    },
  };
}

const FLOOD = 5_000;

/** R11: thousands of connections held open against the proxy; the gateway stays bounded. */
function connectionFlood(): Attack {
  let sampler: ReturnType<typeof setInterval> | undefined;
  let before = fdsAndThreads();
  let peak = before;
  let peakRelay = 0;
  return {
    id: "R11",
    name: `proxy connection flood (${FLOOD} connections held open)`,
    needs: ["python3"],
    timeoutMs: 120_000,
    prepare: () => {
      before = fdsAndThreads();
      peak = before;
      peakRelay = 0;
      sampler = setInterval(() => {
        const now = fdsAndThreads();
        peak = { fds: Math.max(peak.fds, now.fds), threads: Math.max(peak.threads, now.threads) };
        peakRelay = Math.max(peakRelay, relayThreads());
      }, 20);
      return String(FLOOD);
    },
    // Room for the sockets in the attacker's process; no pids limit, as the default policy.
    policy: { ...PROXY, openFiles: 3 * FLOOD },
    // Each connection waits up to 50 ms for the proxy's answer before the next: without that
    // pacing, connects outrun the forwarder's accept queue and stall on SYN retransmits
    // (1 s each), which only makes the attack slower.
    script: python(`
import select, time
started = time.time()
socks = []
for i in range(int(sys.argv[1])):
    s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
    socks.append(s)
    p = select.poll()
    p.register(s, select.POLLIN)
    p.poll(50)
print("opened=%d" % len(socks), flush=True)
print("seconds=%.1f" % (time.time() - started), flush=True)
time.sleep(0.5)
refused, waiting, closed, sample = 0, 0, 0, b""
for s in socks:
    s.setblocking(False)
    try:
        data = s.recv(4096)
    except BlockingIOError:
        waiting += 1
        continue
    if data.startswith(b"HTTP/1.1 503 "):
        refused += 1
        sample = sample or data
    else:
        closed += 1
print("refused=%d" % refused)
print("waiting=%d" % waiting)
print("closed=%d" % closed)
print("body=" + sample.decode().split("\\r\\n\\r\\n", 1)[-1].strip())`),
    expect: async (r) => {
      clearInterval(sampler);
      const out = keyValues(r.stdout);
      assertEquals(r.exitCode, 0, r.stderr);
      assertEquals(out.opened, String(FLOOD), r.stdout);
      // Past the cap every connection got the 503 at once; the admitted ones still wait for
      // their request head (or were closed by the relay's 30 s head timeout, which frees their
      // slot, if the attack ran that long). The result counts exactly the refusals seen.
      const [refused, waiting, closed] = [out.refused, out.waiting, out.closed].map(Number);
      assertEquals(refused + waiting + closed, FLOOD, r.stdout);
      assert(waiting <= 64 && waiting + closed >= 64, r.stdout);
      assert(closed === 0 || Number(out.seconds) >= 30, `closed early: ${r.stdout}`);
      assertEquals(r.proxyRefusedConnections, refused);
      assertMatch(
        out.body,
        /^coop: blocked by sandbox policy: this sandbox already has 64 connections open/,
      );
      // The gateway (this process) held one relay thread and one fd per admitted connection,
      // plus the acceptor; Deno's own pools may add a few threads of their own.
      assert(peakRelay >= 64 && peakRelay <= 64 + 1, `relay threads at most: ${peakRelay}`);
      assert(
        peak.threads <= before.threads + 64 + 1 + 16,
        `threads ${before.threads} → ${peak.threads}`,
      );
      assert(peak.fds <= before.fds + 64 + 32, `fds ${before.fds} → ${peak.fds}`);
      assert(await relayThreadsSettleAt(0), `every relay thread was joined: ${relayThreads()}`);
      const after = fdsAndThreads();
      assert(after.threads <= before.threads + 16, `threads ${before.threads} → ${after.threads}`);
      // A few fds stay for good after this process's first sandbox (the library, the reaper);
      // a leak per connection would be thousands.
      assert(after.fds <= before.fds + 16, `fds ${before.fds} → after: ${after.fds}`);
    },
    teardown: () => clearInterval(sampler),
  };
}

attackSuite("§4.2/4.5 proxy", [
  mappedAndTranslated(),
  onLinkNeighbours(),
  consentNeverGateway(),
  connectionFlood(),
]);
