import { assert, assertEquals, assertMatch, assertThrows } from "../assert.ts";
import { Allowlist, parseAllowEntry } from "../../src/sandbox/proxy/allowlist.ts";
import { forbiddenRange } from "../../src/sandbox/proxy/address_policy.ts";

Deno.test("allowlist: exact names, wildcards and ports, as docs/network.md says", () => {
  const list = new Allowlist(["example.com", "*.example.org:8443", "API.GitHub.com.", "[::1]:80"]);
  const cases: [string, number, boolean][] = [
    ["example.com", 443, true],
    ["example.com", 80, true],
    ["example.com", 8080, false], // no port written: 80 and 443 only
    ["www.example.com", 443, false], // exact means exact
    ["a.example.org", 8443, true],
    ["a.b.example.org", 8443, true],
    ["example.org", 8443, false], // a wildcard does not cover the apex
    ["a.example.org", 443, false],
    ["evilexample.org", 8443, false],
    ["api.github.com", 443, true], // case and trailing dot normalized
    ["::1", 80, true],
  ];
  for (const [host, port, allowed] of cases) {
    assertEquals(Boolean(list.match(host, port)), allowed, `${host}:${port}`);
  }
  assert(list.hasHost("example.com") && !list.hasHost("other.com"));
});

Deno.test("allowlist: malformed entries are refused with a reason", () => {
  for (
    const [entry, reason] of [
      ["example.com:0", /port/],
      ["example.com:http", /port/],
      ["*.com", /wildcard needs a domain with a dot/],
      ["a.*.example.com", /expected HOST/],
      ["exa mple.com", /expected HOST/],
      ["2001:db8::1", /brackets/],
      ["", /expected HOST/],
    ] as const
  ) {
    assertMatch(assertThrows(() => parseAllowEntry(entry), Error).message, reason);
  }
});

Deno.test("addresses: only public unicast is dialable", () => {
  const refused = [
    "127.0.0.1",
    "127.8.9.10",
    "0.0.0.0",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "224.0.0.1",
    "255.255.255.255",
    "::",
    "::1",
    "::ffff:127.0.0.1",
    "::ffff:a9fe:a9fe",
    "fd00:ec2::254",
    "fc00::1",
    "fe80::1%eth0",
    "ff02::1",
    "64:ff9b::10.0.0.1",
    "2002:a9fe:a9fe::1",
  ];
  for (const address of refused) assert(forbiddenRange(address), `${address} must be refused`);
  for (
    const address of ["1.1.1.1", "93.184.216.34", "172.32.0.1", "2606:4700::1111", "::ffff:8.8.8.8"]
  ) {
    assertEquals(forbiddenRange(address), null, address);
  }
  assertMatch(forbiddenRange("169.254.169.254")!, /metadata/);
});
