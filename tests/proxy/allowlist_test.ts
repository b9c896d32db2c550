import { assert, assertEquals, assertMatch, assertThrows } from "../assert.ts";
import { Allowlist, parseAllowEntry } from "../../src/sandbox/proxy/allowlist.ts";

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

Deno.test("allowlist: IP literals compare parsed and reduced, never as text", () => {
  const list = new Allowlist(["[::ffff:10.0.0.5]:8080", "[FD00::0005]:443", "192.0.2.7"]);
  const cases: [string, number, boolean][] = [
    ["10.0.0.5", 8080, true],
    ["::ffff:a00:5", 8080, true],
    ["64:ff9b::10.0.0.5", 8080, true], // the same IPv4 address, however it is spelled
    ["10.0.0.5", 80, false],
    ["fd00::5", 443, true],
    ["fd00:0:0:0:0:0:0:5", 443, true],
    ["192.0.2.7", 80, true],
    ["::ffff:192.0.2.7", 443, true],
    ["010.0.0.5", 8080, false], // not an address: no entry names it
    ["192.0.2.70", 80, false],
  ];
  for (const [host, port, allowed] of cases) {
    assertEquals(Boolean(list.match(host, port)), allowed, `${host}:${port}`);
  }
  assertEquals(parseAllowEntry("[::ffff:10.0.0.5]:8080").address, "10.0.0.5");
  assertEquals(parseAllowEntry("example.com").address, undefined);
  // A literal never matches a name entry, nor a name a literal entry.
  assert(!new Allowlist(["example.com"]).match("93.184.216.34", 443));
  assertMatch(
    assertThrows(() => parseAllowEntry("010.0.0.5:8080"), Error).message,
    /not a valid IP address \(IPv4 in dotted decimal without leading zeros/,
  );
});
