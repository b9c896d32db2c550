import { assertEquals, assertMatch, assertThrows } from "../assert.ts";
import { resolvePolicy, SandboxPolicyError } from "../../src/sandbox/mod.ts";
import { decodeWaitStatus } from "../../src/sandbox/wait_status.ts";
import { parseDuration } from "../../src/cli/duration.ts";

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

Deno.test("wait statuses decode like a shell reports them", () => {
  assertEquals(decodeWaitStatus(7 << 8), { exitCode: 7, signal: null });
  assertEquals(decodeWaitStatus(9), { exitCode: 137, signal: "SIGKILL" });
  assertEquals(decodeWaitStatus(15), { exitCode: 143, signal: "SIGTERM" });
});

Deno.test("durations: units, bare seconds, and garbage", () => {
  assertEquals(parseDuration("500ms"), 500);
  assertEquals(parseDuration("30s"), 30_000);
  assertEquals(parseDuration("2m"), 120_000);
  assertEquals(parseDuration("5"), 5_000);
  assertEquals(parseDuration("0s"), undefined);
  assertEquals(parseDuration("ten"), undefined);
});
