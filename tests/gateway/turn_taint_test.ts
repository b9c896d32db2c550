/**
 * `TurnTaint`: how a turn's contributors grow as it reads memory (ATTACKS P14), what
 * `authorize()` then decides, and what is logged. Unit tests: no database, no provider.
 */
import { withCapturedLogs } from "../fixtures/captured_logs.ts";
import fc from "fast-check";
import {
  leastTrustedReaderOf,
  memoryReadersOf,
  TRUST_LEVELS,
  type TrustLevel,
  trustRank,
} from "../../src/trust/trust_level.ts";
import { authorize, decide, type Principal } from "../../src/trust/authorization.ts";
import { type MemoryProvenance, TurnTaint } from "../../src/gateway/turn_taint.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";

const owner: Principal = { name: "alice", trust: "owner" };
const where = { channel: "terminal", ceiling: null };

function memory(id: number, author: string, trust: TrustLevel): MemoryProvenance {
  return { id, store: trust === "owner" ? "private" : "social", author, trust };
}

function bash(taint: TurnTaint) {
  return decide(taint.principal, { ...taint.situation, sandboxEnabled: true }, {
    kind: "tool",
    tool: "bash",
  });
}

Deno.test("taint: the history's least trusted message sets the turn's starting trust", () => {
  const taint = TurnTaint.fromHistory(owner, where, [{ trust: "owner" }, { trust: "inner" }]);
  assertEquals(taint.trust, "inner");
  assertEquals(new Set(taint.situation.contributors), new Set(["owner", "inner"]));
  assertEquals(taint.explain(), null, "history alone is not memory taint");
});

Deno.test("taint: the owner reading a familiar's memory drops to familiar — no bash at all", () => {
  const taint = TurnTaint.fromHistory(owner, where, []);
  assertEquals(bash(taint).rule, "tool.bash.owner_host");
  const lowered = taint.read([memory(1, "alice", "owner"), memory(7, "carol", "familiar")]);
  assertEquals(lowered, [memory(7, "carol", "familiar")], "only the entry that lowered it");
  assertEquals(taint.trust, "familiar");
  assert(taint.situation.contributors.includes("familiar"));
  assertEquals(bash(taint).allowed, false);
  assertEquals(bash(taint).rule, "tool.bash.needs_inner");
  assertMatch(taint.explain()!, /trust "familiar" because it read memory #7 \(social, by carol/);
});

Deno.test("taint: an inner contact's memory sends the owner's bash into the sandbox", () => {
  const taint = TurnTaint.fromHistory(owner, where, []);
  taint.read([memory(3, "dave", "inner")]);
  const decision = bash(taint);
  assertEquals([decision.allowed, decision.placement], [true, "sandbox"]);
  assertEquals(decision.rule, "tool.bash.sandboxed");
});

Deno.test("taint: reading the owner's own memory changes nothing", () => {
  const taint = TurnTaint.fromHistory(owner, where, []);
  assertEquals(taint.read([memory(1, "alice", "owner"), memory(2, "alice", "owner")]), []);
  assertEquals(taint.trust, "owner");
  assertEquals(bash(taint).placement, "host");
  assertEquals(taint.explain(), null);
});

Deno.test("taint: after a familiar read the owner's turn writes no shared store — its context holds the owner's text", () => {
  const taint = TurnTaint.fromHistory(owner, where, []);
  taint.read([memory(7, "carol", "familiar")]);
  const write = (store: "private" | "shared" | "social") =>
    decide(owner, { ...taint.situation, sandboxEnabled: true }, { kind: "memory_write", store });
  // Lowered to familiar (no write-up into private), and holding what the owner said: no social.
  assertEquals(
    [write("private").rule, write("shared").rule, write("social").rule],
    ["memory.private.denied", "memory.shared.denied", "memory.social.write_down_held"],
  );
  const personal = decide(owner, { ...taint.situation, sandboxEnabled: true }, {
    kind: "memory_write",
    store: "personal",
    person: "alice",
  });
  assertEquals(personal.rule, "memory.personal.own_write", "their own store stays theirs");
});

Deno.test("taint: a full turn that read private hits, then an inner's entry, may not write shared", () => {
  const bob: Principal = { name: "bob", trust: "full" };
  const taint = TurnTaint.fromHistory(bob, where, []);
  // One search returns both: bob's private hit and dave's shared entry, which lowers the turn.
  taint.read([
    { id: 1, store: "private", author: "bob", trust: "full" },
    { id: 2, store: "shared", author: "dave", trust: "inner" },
  ]);
  assertEquals(taint.trust, "inner");
  const decision = decide(bob, { ...taint.situation, sandboxEnabled: true }, {
    kind: "memory_write",
    store: "shared",
  });
  assertEquals([decision.allowed, decision.rule], [false, "memory.shared.write_down_held"]);
});

Deno.test("taint: a lowered turn's earlier messages count too — the next turn of the session holds them", () => {
  const bob: Principal = { name: "bob", trust: "full" };
  // The session so far: bob's messages at full (private hits among them), then one lowered.
  const taint = TurnTaint.fromHistory(bob, where, [{ trust: "full" }, { trust: "inner" }]);
  assertEquals(taint.trust, "inner");
  const shared = decide(bob, { ...taint.situation, sandboxEnabled: true }, {
    kind: "memory_write",
    store: "shared",
  });
  assertEquals(shared.rule, "memory.shared.write_down_held");
});

Deno.test("property: a permitted memory write goes only where everyone reading it may read all the turn holds", () => {
  const level = fc.constantFrom(...TRUST_LEVELS);
  const store = fc.constantFrom("private", "shared", "social") as fc.Arbitrary<
    "private" | "shared" | "social"
  >;
  const read = fc.record({ store, trust: level });
  fc.assert(
    fc.property(level, fc.array(level, { maxLength: 3 }), fc.array(read, { maxLength: 4 }), store, (
      own,
      history,
      reads,
      target,
    ) => {
      const principal = { name: "u", trust: own };
      const taint = TurnTaint.fromHistory(principal, where, history.map((trust) => ({ trust })));
      const readable = reads.filter((r) =>
        decide(principal, { ...taint.situation, sandboxEnabled: true }, {
          kind: "memory_read",
          store: r.store,
        }).allowed
      );
      taint.read(readable.map((r, i) => ({ id: i, author: "x", ...r })));
      const write = decide(principal, { ...taint.situation, sandboxEnabled: true }, {
        kind: "memory_write",
        store: target,
      });
      if (!write.allowed || taint.trust === "owner") return;
      // Everything in the context: the history, the principal's own words, each store read.
      const held = [...history, own, ...readable.map((r) => leastTrustedReaderOf(r.store))];
      for (const reader of memoryReadersOf(target)) {
        for (const level of held) assert(trustRank(reader) <= trustRank(level), "write-down");
      }
    }),
    { numRuns: 1000 },
  );
});

Deno.test("property: reading memories never raises a turn's trust and ends at the least trusted", () => {
  const level = fc.constantFrom(...TRUST_LEVELS);
  fc.assert(
    fc.property(
      level,
      fc.array(level, { maxLength: 3 }),
      fc.array(fc.array(level, { maxLength: 4 }), { maxLength: 4 }),
      (own, history, reads) => {
        const taint = TurnTaint.fromHistory(
          { name: "u", trust: own },
          where,
          history.map((trust) => ({ trust })),
        );
        let previous = taint.trust;
        for (const batch of reads) {
          taint.read(batch.map((trust, i) => memory(i, "x", trust)));
          assert(trustRank(taint.trust) >= trustRank(previous), "never raised");
          previous = taint.trust;
        }
        const all = [own, ...history, ...reads.flat()];
        assertEquals(trustRank(taint.trust), Math.max(...all.map(trustRank)));
      },
    ),
    { numRuns: 500 },
  );
});

Deno.test("taint: the lowering is logged, and authz.decision shows the new contributor", async () => {
  await withCapturedLogs((records) => {
    const taint = TurnTaint.fromHistory(owner, where, []);
    taint.read([memory(7, "carol", "familiar")]);
    authorize(owner, { ...taint.situation, sandboxEnabled: true }, { kind: "tool", tool: "bash" });
    const tainted = records.find((r) => r.properties.event === "turn.tainted");
    assert(tainted, "a turn.tainted event");
    assertEquals(tainted.properties.from, "owner");
    assertEquals(tainted.properties.to, "familiar");
    assertEquals(tainted.properties.memories, [memory(7, "carol", "familiar")]);
    const decision = records.find((r) => r.properties.event === "authz.decision");
    assert(decision, "an authz.decision event");
    assertEquals(decision.properties.contributors, ["familiar"]);
    assertEquals(decision.properties.effectiveTrust, "familiar");
    assertEquals(decision.properties.allowed, false);
  });
});
