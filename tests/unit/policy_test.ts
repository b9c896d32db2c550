import { assertEquals, assertMatch, assertThrows } from "../assert.ts";
import { resolvePolicy, SandboxPolicyError } from "../../src/sandbox/mod.ts";

Deno.test("a policy needs only a workspace; defaults are deny-by-default", () => {
  const p = resolvePolicy({ workspace: "/srv/ws" });
  assertEquals(p.network, "none");
  assertEquals(p.readOnlyPaths, []);
  assertEquals(p.envPassthrough, []);
  assertEquals(p.proxyMaxConnections, 64);
  assertEquals(p.proxyNeverDial, []);
});

Deno.test("invalid policy fields are named in the error", () => {
  const cases: [unknown, RegExp][] = [
    [{ workspace: "relative/path" }, /workspace: must be an absolute path/],
    [{ workspace: "/w", network: "socks" }, /network/],
    [
      { workspace: "/w", allowDomains: ["example.com"] },
      /allowDomains: only applies with network "proxy"/,
    ],
    [{ workspace: "/w", network: "proxy", allowDomains: ["*.com:x"] }, /allowDomains\.0: .*port/],
    [{ workspace: "/w", readOnlyPaths: ["/usr/../etc"] }, /readOnlyPaths\.0/],
    [{ workspace: "/w", env: { "BAD NAME": "x" } }, /env/],
    [{ workspace: "/w", tmpSizeBytes: 10 }, /tmpSizeBytes/],
    [{ workspace: "/w", surprise: true }, /surprise|Unrecognized/],
    [{ workspace: "/w", proxyMaxConnections: 0 }, /proxyMaxConnections: must be at least 1/],
    [{ workspace: "/w", proxyMaxConnections: 5000 }, /proxyMaxConnections: must be at most 4096/],
    [{ workspace: "/w", proxyMaxConnections: 1.5 }, /proxyMaxConnections: must be a whole number/],
    [{ workspace: "/w", proxyNeverDial: ["localhost:8787"] }, /proxyNeverDial\.0: .*IP:PORT/],
  ];
  for (const [input, message] of cases) {
    const error = assertThrows(() => resolvePolicy(input as never), SandboxPolicyError);
    assertMatch(error.message, message);
  }
});
