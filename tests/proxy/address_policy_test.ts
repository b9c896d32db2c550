// The proxy's address rules (address_policy.ts) as properties: every spelling of a refused
// address is refused, public addresses are dialed (embedded IPv4 as IPv4), the reduction is
// idempotent, and the host's own addresses and subnets count however they are written.
import fc from "fast-check";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import {
  decideAddress,
  type DialRules,
  type HostNetwork,
  parseAddress,
  parseSocketAddress,
  reduceAddress,
} from "../../src/sandbox/proxy/address_policy.ts";

const NO_INTERFACES: HostNetwork = { interfaces: [] };
const rules = (extra: Partial<DialRules> = {}): DialRules => ({
  host: NO_INTERFACES,
  port: 443,
  ...extra,
});

/** IPv4 ranges the proxy refuses for a name, written here independently of ipaddr.js. */
const REFUSED_V4 = [
  "0.0.0.0/8",
  "10.0.0.0/8",
  "100.64.0.0/10",
  "127.0.0.0/8",
  "169.254.0.0/16",
  "172.16.0.0/12",
  "192.0.0.0/24",
  "192.0.2.0/24",
  "192.88.99.0/24",
  "192.168.0.0/16",
  "198.18.0.0/15",
  "198.51.100.0/24",
  "203.0.113.0/24",
  "224.0.0.0/4",
  "240.0.0.0/4",
];
/** Anycast services ipaddr.js also sets apart (AS112, AMT): refused too, and not generated as
 * "public" below. */
const SET_APART_V4 = ["192.31.196.0/24", "192.52.193.0/24", "192.175.48.0/24"];

/** IPv6 ranges refused in their own right (not an embedding of IPv4). */
const REFUSED_V6 = [
  "::/128",
  "::1/128",
  "fe80::/10",
  "fec0::/10",
  "fc00::/7",
  "ff00::/8",
  "100::/64",
  "2001::/32", // Teredo
  "2001:2::/48",
  "2001:db8::/32",
  "3fff::/20",
  "5f00::/16",
  "4000::/2", // outside global unicast
];

function v4Int(text: string): number {
  return text.split(".").reduce((n, octet) => n * 256 + Number(octet), 0);
}

function v4Text(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");
}

function inV4(n: number, cidr: string): boolean {
  const [base, bits] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  return Math.floor(n / size) === Math.floor(v4Int(base) / size);
}

/** A random address inside an IPv4 CIDR. */
function v4In(cidr: string): fc.Arbitrary<number> {
  const [base, bits] = cidr.split("/");
  const size = 2 ** (32 - Number(bits));
  const start = Math.floor(v4Int(base) / size) * size;
  return fc.integer({ min: 0, max: size - 1 }).map((h) => start + h);
}

/** Eight random groups inside an IPv6 CIDR. */
function v6In(cidr: string): fc.Arbitrary<number[]> {
  const [base, bits] = cidr.split("/");
  const prefix = parseAddress(base)!.toByteArray();
  return fc.array(fc.integer({ min: 0, max: 255 }), { minLength: 16, maxLength: 16 }).map(
    (random) => {
      const bytes = random.map((r, i) => {
        const keep = Math.max(0, Math.min(8, Number(bits) - 8 * i));
        const mask = (0xff << (8 - keep)) & 0xff;
        return (prefix[i] & mask) | (r & ~mask & 0xff);
      });
      return Array.from({ length: 8 }, (_, i) => (bytes[2 * i] << 8) | bytes[2 * i + 1]);
    },
  );
}

const hex = (n: number, pad = 0) => n.toString(16).padStart(pad, "0");

/** Every way a resolver or a client may spell IPv4 address `n` (`zone` appended to IPv6). */
function spellings(n: number, zone: string): string[] {
  const dotted = v4Text(n);
  const hi = hex(n >>> 16), lo = hex(n & 0xffff);
  const forms = [
    `::ffff:${dotted}`,
    `0:0:0:0:0:ffff:${dotted}`,
    `::ffff:${hi}:${lo}`,
    `0000:0000:0000:0000:0000:FFFF:${hex(n >>> 16, 4)}:${hex(n & 0xffff, 4)}`.toUpperCase(),
    `::ffff:0:${dotted}`,
    `::ffff:0:${hi}:${lo}`,
    `64:ff9b::${dotted}`,
    `0064:FF9B:0000:0000:0000:0000:${hi}:${lo}`,
    `64:ff9b:1::${dotted}`,
    `64:ff9b:1::${hi}:${lo}`,
    `2002:${hi}:${lo}::1`,
    `2002:${hex(n >>> 16, 4)}:${hex(n & 0xffff, 4)}:abcd::`.toUpperCase(),
  ];
  if (n > 1) forms.push(`::${dotted}`, `::${hi}:${lo}`);
  return [dotted, ...forms, ...forms.map((f) => f + zone)];
}

const zones = fc.constantFrom("", "%eth0", "%25eth0", "%1");

Deno.test("addresses: every spelling of an address in a refused IPv4 range is refused", () => {
  for (const cidr of [...REFUSED_V4, ...SET_APART_V4]) {
    fc.assert(
      fc.property(v4In(cidr), zones, (n, zone) => {
        for (const text of spellings(n, zone)) {
          const decision = decideAddress(text, rules());
          assert("refused" in decision, `${text} (${cidr}) must be refused`);
          if (text !== v4Text(n)) {
            // The reason names the address it was reduced to.
            assert(decision.shown.includes(`= ${v4Text(n)},`), decision.shown);
          }
        }
      }),
      { numRuns: 40 },
    );
  }
});

Deno.test("addresses: every spelling of an address in a refused IPv6 range is refused", () => {
  for (const cidr of REFUSED_V6) {
    fc.assert(
      fc.property(v6In(cidr), zones, fc.boolean(), (groups, zone, upper) => {
        const address = parseAddress(groups.map((g) => hex(g)).join(":"))!;
        const texts = [
          address.toString(),
          address.toNormalizedString(),
          (address as unknown as { toFixedLengthString(): string }).toFixedLengthString(),
        ].map((t) => (upper ? t.toUpperCase() : t) + zone);
        for (const text of texts) {
          const decision = decideAddress(text, rules());
          assert("refused" in decision, `${text} (${cidr}) must be refused`);
        }
      }),
      { numRuns: 60 },
    );
  }
  // Local-use NAT64 outside its /96 layout: which bits hold IPv4 is the network's choice.
  fc.assert(
    fc.property(v6In("64:ff9b:1::/48"), (groups) => {
      fc.pre(groups.slice(3, 6).some((g) => g !== 0));
      const d = decideAddress(groups.map((g) => hex(g)).join(":"), rules());
      assert("refused" in d);
      assertMatch(d.refused, /NAT64/);
    }),
  );
});

const publicV4 = fc.integer({ min: 0, max: 2 ** 32 - 1 }).filter((n) =>
  ![...REFUSED_V4, ...SET_APART_V4].some((cidr) => inV4(n, cidr))
);

Deno.test("addresses: public IPv4 is dialed as IPv4, however it is spelled (not Teredo)", () => {
  fc.assert(
    fc.property(publicV4, zones, (n, zone) => {
      for (const text of spellings(n, zone)) {
        assertEquals(decideAddress(text, rules()), { address: v4Text(n) }, text);
      }
      const teredo = decideAddress(`2001:0:${hex(n >>> 16)}:${hex(n & 0xffff)}::1`, rules());
      assert("refused" in teredo);
      assertMatch(teredo.refused, /Teredo/);
    }),
  );
});

Deno.test("addresses: public IPv6 unicast is dialed in canonical form", () => {
  const excluded = ["2001::/16", "2002::/16", "3fff::/16", "2620:4f::/32"].map((c) =>
    parseAddress(c.split("/")[0])!.toByteArray().slice(0, Number(c.split("/")[1]) / 8)
  );
  fc.assert(
    fc.property(v6In("2000::/3"), (groups) => {
      const address = parseAddress(groups.map((g) => hex(g)).join(":"))!;
      const bytes = address.toByteArray();
      fc.pre(!excluded.some((prefix) => prefix.every((b, i) => bytes[i] === b)));
      const text = address.toNormalizedString().toUpperCase();
      assertEquals(decideAddress(text, rules()), { address: address.toString() });
    }),
  );
});

Deno.test("addresses: the reduction is idempotent", () => {
  const anyV6 = fc.array(fc.integer({ min: 0, max: 0xffff }), { minLength: 8, maxLength: 8 });
  const embedded = fc.tuple(fc.integer({ min: 0, max: 2 ** 32 - 1 }), zones).chain((
    [n, zone],
  ) => fc.constantFrom(...spellings(n, zone)));
  const texts = fc.oneof(anyV6.map((g) => g.map((x) => hex(x)).join(":")), embedded);
  fc.assert(
    fc.property(texts, (text) => {
      const once = reduceAddress(parseAddress(text)!).address;
      const twice = reduceAddress(once).address;
      assertEquals(twice.toString(), once.toString());
      // And deciding on the reduced address gives the same answer as on the original.
      const a = decideAddress(text, rules()), b = decideAddress(once.toString(), rules());
      assertEquals("address" in a ? a.address : null, "address" in b ? b.address : null);
    }),
    { numRuns: 300 },
  );
});

Deno.test("addresses: strict parsing — ambiguous IPv4 spellings are no address at all", () => {
  for (
    const text of [
      "010.0.0.1", // octal to inet_aton
      "127.1",
      "2130706433",
      "0x7f.0.0.1",
      "127.000.000.001",
      "::ffff:010.0.0.1",
      "::ffff:0x7f.0.0.1",
      "1.2.3.4%eth0",
      "[::1]",
      "example.com",
      "",
    ]
  ) {
    assertEquals(parseAddress(text), null, text);
    assert("refused" in decideAddress(text, rules({ consent: true })), text);
  }
});

// An interface on a public subnet, so only the host rules can refuse its neighbours.
const PUBLIC_LAN: HostNetwork = {
  interfaces: [
    { name: "eth0", address: parseAddress("8.8.8.8")!, prefixLength: 24 },
    { name: "eth0", address: parseAddress("2606:4700:10::6")!, prefixLength: 64 },
  ],
};

Deno.test("addresses: the host's own addresses and on-link subnets, parsed, whatever the range", () => {
  const on = rules({ host: PUBLIC_LAN });
  for (const own of ["8.8.8.8", "::ffff:8.8.8.8", "::FFFF:808:808", "64:ff9b::808:808%eth0"]) {
    const d = decideAddress(own, on);
    assert("refused" in d, own);
    assertEquals(d.refused, "an address of the Coop host itself (eth0)");
  }
  fc.assert(
    fc.property(v4In("8.8.8.0/24"), zones, (n, zone) => {
      fc.pre(n !== v4Int("8.8.8.8"));
      for (const text of spellings(n, zone)) {
        const d = decideAddress(text, on);
        assert("refused" in d, text);
        assertEquals(d.refused, "on-link: in 8.8.8.0/24, a subnet of the Coop host (eth0)");
      }
    }),
  );
  const v6 = decideAddress("2606:4700:10:0:ffff::1", on);
  assert("refused" in v6);
  assertMatch(v6.refused, /on-link: in 2606:4700:10::\/64/);
  assertEquals(decideAddress("8.8.9.1", on), { address: "8.8.9.1" });
  assertEquals(decideAddress("2606:4700:11::1", on), { address: "2606:4700:11::1" });
});

Deno.test("addresses: consent lifts the ranges and host rules, never the ones that cannot lift", () => {
  const consent = rules({ host: PUBLIC_LAN, consent: true });
  for (
    const [text, dialed] of [
      ["10.0.0.5", "10.0.0.5"],
      ["127.0.0.1", "127.0.0.1"],
      ["::ffff:10.0.0.5", "10.0.0.5"],
      ["fd00::5", "fd00::5"],
      ["8.8.8.8", "8.8.8.8"],
      ["8.8.8.77", "8.8.8.77"],
      ["192.0.2.9", "192.0.2.9"],
    ]
  ) {
    assertEquals(decideAddress(text, consent), { address: dialed }, text);
  }
  for (
    const [text, why] of [
      ["0.0.0.0", /unspecified/],
      ["::", /unspecified/],
      ["::ffff:0.0.0.0", /unspecified/],
      ["169.254.169.254", /link-local or cloud metadata/],
      ["::ffff:169.254.169.254", /link-local or cloud metadata/],
      ["fe80::1%eth0", /link-local/],
      ["fd00:ec2::254", /cloud metadata endpoint/],
      ["100.100.100.200", /cloud metadata endpoint/],
      ["224.0.0.1", /multicast/],
      ["ff02::1", /multicast/],
      ["255.255.255.255", /broadcast/],
    ] as const
  ) {
    const d = decideAddress(text, consent);
    assert("refused" in d, text);
    assertMatch(d.refused, why, text);
  }
});

Deno.test("addresses: the gateway's own sockets are never dialed, on any address of this host", () => {
  const neverDial = ["127.0.0.1:8787", "[2001:db8::1]:9000", "0.0.0.0:7000"].map(
    parseSocketAddress,
  );
  const on = (port: number) => rules({ host: PUBLIC_LAN, consent: true, port, neverDial });
  for (
    const [text, port] of [
      ["127.0.0.1", 8787],
      ["127.0.0.2", 8787],
      ["::1", 8787],
      ["::ffff:127.0.0.1", 8787],
      ["8.8.8.8", 8787], // an own address: a socket on 127.0.0.1 may be on 0.0.0.0 too
      ["2001:db8::1", 9000],
      ["8.8.8.8", 7000],
    ] as const
  ) {
    const d = decideAddress(text, on(port));
    assert("refused" in d, `${text}:${port}`);
    assertEquals(d.refused, "a socket of the Coop gateway itself");
  }
  assertEquals(decideAddress("127.0.0.1", on(8788)), { address: "127.0.0.1" });
  assertEquals(decideAddress("8.8.8.77", on(8787)), { address: "8.8.8.77" }, "a neighbour");
  const everyPort = rules({
    consent: true,
    port: 11434,
    neverDial: [parseSocketAddress("[::]:0")],
  });
  assert("refused" in decideAddress("127.0.0.1", everyPort), "port 0 stands for every port");
  for (const bad of ["localhost:80", "127.0.0.1", "[::1]", "1.2.3.4:65536", "::1:80"]) {
    let message = "";
    try {
      parseSocketAddress(bad);
    } catch (error) {
      message = (error as Error).message;
    }
    assertMatch(message, /expected IP:PORT or \[IPv6\]:PORT/, bad);
  }
});
