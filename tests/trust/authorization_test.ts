import { ok, strictEqual } from "node:assert/strict";
import fc from "fast-check";
import { MEMORY_STORES, TRUST_LEVELS, type TrustLevel } from "../../src/trust/trust_level.ts";
import { TOOL_NAMES } from "../../src/trust/tool_names.ts";
import {
  type Action,
  authorize,
  decide,
  type MemoryEntryRef,
  type Principal,
  type Situation,
} from "../../src/trust/authorization.ts";

/** Every action the table covers, with a short label. */
const ACTIONS: ReadonlyArray<[string, Action]> = [
  ["route", { kind: "route_message" }],
  ...TOOL_NAMES.map((tool): [string, Action] => [tool, { kind: "tool", tool }]),
  ...MEMORY_STORES.map((
    store,
  ): [string, Action] => [`read:${store}`, { kind: "memory_read", store }]),
  ...MEMORY_STORES.map((
    store,
  ): [string, Action] => [`write:${store}`, { kind: "memory_write", store }]),
  ["config:users", { kind: "config_change", section: "users" }],
  ["config:agent", { kind: "config_change", section: "agent" }],
  ["cron_create", { kind: "cron_create" }],
];

// Expected outcome per effective trust, one letter per ACTIONS entry, written out by hand:
// A allowed (in the gateway), H allowed on the host, S allowed in the sandbox, - denied.
// Memory writes follow "no write-down" (docs/memory.md): below the owner, a turn writes only the
// store whose least trusted reader is exactly its own trust.
//        route bash exec read write edit send msrch mwrt mget mfgt r:priv r:sh r:soc w:priv w:sh w:soc cfg:u cfg:a cron
const EXPECTED_SANDBOX_ON: Record<TrustLevel, string> = {
  owner:
    "A     H    H    H    H     H    H    A     A    A    A    A      A    A     A      A    A     A     A     A",
  full:
    "A     S    S    S    S     S    S    A     A    A    A    A      A    A     A      -    -     -     -     -",
  inner:
    "A     S    S    S    S     S    S    A     A    A    A    -      A    A     -      A    -     -     -     -",
  familiar:
    "A     -    -    S    -     -    S    A     A    A    A    -      -    A     -      -    A     -     -     -",
  public:
    "A     -    -    -    -     -    -    -     -    -    -    -      -    -     -      -    -     -     -     -",
};
// With the sandbox disabled only non-owner bash and exec change: they have nowhere safe to run.
const EXPECTED_SANDBOX_OFF: Record<TrustLevel, string> = {
  ...EXPECTED_SANDBOX_ON,
  full:
    "A     -    -    S    S     S    S    A     A    A    A    A      A    A     A      -    -     -     -     -",
  inner:
    "A     -    -    S    S     S    S    A     A    A    A    -      A    A     -      A    -     -     -     -",
};

/** Situations, and the effective trust each gives every user trust (owner..public), by hand. */
const SITUATIONS: ReadonlyArray<[string, Situation, TrustLevel[]]> = [
  [
    "direct, sandbox on",
    { channel: "http", ceiling: null, contributors: [], sandboxEnabled: true },
    ["owner", "full", "inner", "familiar", "public"],
  ],
  ["direct, sandbox off", {
    channel: "http",
    ceiling: null,
    contributors: [],
    sandboxEnabled: false,
  }, ["owner", "full", "inner", "familiar", "public"]],
  ["terminal", { channel: "terminal", ceiling: null, contributors: [], sandboxEnabled: true }, [
    "owner",
    "full",
    "inner",
    "familiar",
    "public",
  ]],
  ["cron", { channel: "cron", ceiling: null, contributors: [], sandboxEnabled: true }, [
    "owner",
    "full",
    "inner",
    "familiar",
    "public",
  ]],
  ["group, default ceiling", {
    channel: "telegram",
    ceiling: "familiar",
    contributors: [],
    sandboxEnabled: true,
  }, ["familiar", "familiar", "familiar", "familiar", "public"]],
  ["group, inner ceiling", {
    channel: "telegram",
    ceiling: "inner",
    contributors: [],
    sandboxEnabled: true,
  }, ["inner", "inner", "inner", "familiar", "public"]],
  ["group, owner ceiling", {
    channel: "telegram",
    ceiling: "owner",
    contributors: [],
    sandboxEnabled: true,
  }, ["owner", "full", "inner", "familiar", "public"]],
  ["quoted inner contact", {
    channel: "http",
    ceiling: null,
    contributors: ["inner"],
    sandboxEnabled: true,
  }, ["inner", "inner", "inner", "familiar", "public"]],
  ["quoted stranger", {
    channel: "http",
    ceiling: null,
    contributors: ["owner", "public"],
    sandboxEnabled: true,
  }, ["public", "public", "public", "public", "public"]],
  ["group history, sandbox off", {
    channel: "signal",
    ceiling: "full",
    contributors: ["familiar"],
    sandboxEnabled: false,
  }, ["familiar", "familiar", "familiar", "familiar", "public"]],
];

function outcome(situation: Situation, trust: TrustLevel, action: Action): string {
  const d = decide({ name: "u", trust }, situation, action);
  if (!d.allowed) return "-";
  return d.placement === "host" ? "H" : d.placement === "sandbox" ? "S" : "A";
}

for (const [label, situation, effective] of SITUATIONS) {
  Deno.test(`authorization table: ${label} (every trust × action)`, () => {
    let cells = 0;
    TRUST_LEVELS.forEach((trust, i) => {
      const table = situation.sandboxEnabled ? EXPECTED_SANDBOX_ON : EXPECTED_SANDBOX_OFF;
      const expected = table[effective[i]].split(/\s+/);
      ACTIONS.forEach(([name, action], j) => {
        strictEqual(
          outcome(situation, trust, action),
          expected[j],
          `${label}: user ${trust} (effective ${effective[i]}) → ${name}`,
        );
        strictEqual(decide({ name: "u", trust }, situation, action).effectiveTrust, effective[i]);
        cells++;
      });
    });
    strictEqual(cells, TRUST_LEVELS.length * ACTIONS.length);
  });
}

Deno.test("authorize returns the same decision as decide and names a rule", () => {
  const situation: Situation = {
    channel: "http",
    ceiling: null,
    contributors: [],
    sandboxEnabled: true,
  };
  const d = authorize({ name: "bob", trust: "familiar" }, situation, {
    kind: "tool",
    tool: "bash",
  });
  strictEqual(d.allowed, false);
  strictEqual(d.rule, "tool.bash.needs_inner");
});

const trustArb = fc.constantFrom(...TRUST_LEVELS);
const situationArb = fc.record({
  channel: fc.constantFrom("terminal", "http", "cron", "telegram", "signal"),
  ceiling: fc.option(trustArb, { nil: null }),
  contributors: fc.array(trustArb, { maxLength: 4 }),
  sandboxEnabled: fc.boolean(),
});
const actionArb = fc.constantFrom(...ACTIONS.map(([, a]) => a));

function lower(level: TrustLevel, by: number): TrustLevel {
  return TRUST_LEVELS[Math.min(TRUST_LEVELS.length - 1, TRUST_LEVELS.indexOf(level) + by)];
}

Deno.test("property: lowering any input trust never grants a new action (except a lower store's write) or moves it to the host", () => {
  fc.assert(
    fc.property(
      trustArb,
      situationArb,
      actionArb,
      fc.integer({ min: 0, max: 3 }),
      fc.integer({ min: 1, max: 4 }),
      trustArb,
      (trust, situation, action, which, by, extra) => {
        const lowered = { ...situation, contributors: [...situation.contributors] };
        let loweredTrust = trust;
        if (which === 0) loweredTrust = lower(trust, by);
        else if (which === 1) lowered.ceiling = lower(situation.ceiling ?? "owner", by);
        else if (which === 2) lowered.contributors.push(extra);
        else if (lowered.contributors.length > 0) {
          lowered.contributors[0] = lower(lowered.contributors[0], by);
        }
        const before = decide({ name: "u", trust }, situation, action);
        const after = decide({ name: "u", trust: loweredTrust }, lowered, action);
        // Without what the turn holds (`holds`), a lowered trust alone would allow writing a
        // lower store; the property below gives the lowered turn its held content.
        if (after.allowed && action.kind !== "memory_write") {
          ok(before.allowed, `lowering granted ${JSON.stringify(action)}`);
        }
        if (after.allowed && after.placement === "host") strictEqual(before.placement, "host");
      },
    ),
    { numRuns: 5000 },
  );
});

Deno.test("property: nothing runs on the host unless effective trust is owner", () => {
  fc.assert(
    fc.property(trustArb, situationArb, actionArb, (trust, situation, action) => {
      const d = decide({ name: "u", trust }, situation, action);
      if (d.allowed && d.placement === "host") strictEqual(d.effectiveTrust, "owner");
      if (action.kind === "tool" && action.tool === "bash" && d.allowed) {
        strictEqual(d.placement, d.effectiveTrust === "owner" ? "host" : "sandbox");
      }
      // Effective trust is never more trusted than any input.
      for (
        const level of [
          trust,
          ...(situation.ceiling ? [situation.ceiling] : []),
          ...situation.contributors,
        ]
      ) {
        ok(TRUST_LEVELS.indexOf(d.effectiveTrust) >= TRUST_LEVELS.indexOf(level));
      }
    }),
    { numRuns: 5000 },
  );
});

const storeArb = fc.constantFrom(...MEMORY_STORES);

Deno.test("property: no write-down — a non-owner turn never writes where someone less trusted reads", () => {
  fc.assert(
    fc.property(trustArb, situationArb, storeArb, (trust, situation, store) => {
      const write = decide({ name: "u", trust }, situation, { kind: "memory_write", store });
      const read = decide({ name: "u", trust }, situation, { kind: "memory_read", store });
      if (!write.allowed) return;
      // Writing implies reading: nobody writes a store they cannot see.
      ok(read.allowed, `${store} writable but not readable at ${write.effectiveTrust}`);
      if (write.effectiveTrust === "owner") return;
      for (const reader of TRUST_LEVELS) {
        const readerMay = decide({ name: "r", trust: reader }, {
          ...situation,
          ceiling: null,
          contributors: [],
        }, { kind: "memory_read", store }).allowed;
        if (readerMay) {
          ok(
            TRUST_LEVELS.indexOf(reader) <= TRUST_LEVELS.indexOf(write.effectiveTrust),
            `${write.effectiveTrust} wrote ${store}, which less trusted ${reader} reads`,
          );
        }
      }
    }),
    { numRuns: 5000 },
  );
});

Deno.test("property: lowering a turn that keeps what it held never grants a memory write", () => {
  fc.assert(
    fc.property(
      trustArb,
      situationArb,
      storeArb,
      trustArb,
      (trust, situation, store, extra) => {
        const action = { kind: "memory_write" as const, store };
        const before = decide({ name: "u", trust }, situation, action);
        // What the turn held before (its effective trust then) stays in its context.
        const held = before.effectiveTrust;
        const lowered = { ...situation, contributors: [...situation.contributors, extra] };
        const after = decide({ name: "u", trust }, { ...lowered, holds: held }, action);
        if (after.allowed && after.effectiveTrust !== "owner") {
          ok(before.allowed, `lowering granted ${JSON.stringify(action)} (${after.rule})`);
        }
      },
    ),
    { numRuns: 5000 },
  );
});

Deno.test("property: a write-down denial names its rule and every non-public turn can write somewhere", () => {
  fc.assert(
    fc.property(trustArb, situationArb, storeArb, (trust, situation, store) => {
      const d = decide({ name: "u", trust }, situation, { kind: "memory_write", store });
      ok(
        /^memory\.(private|shared|social)\.(owner_writes|write_allowed|write_down|write_down_held|denied)$/
          .test(
            d.rule,
          ),
      );
      const writable = MEMORY_STORES.filter((s) =>
        decide({ name: "u", trust }, situation, { kind: "memory_write", store: s }).allowed
      );
      strictEqual(writable.length === 0, d.effectiveTrust === "public");
    }),
    { numRuns: 2000 },
  );
});

const DM: Situation = { channel: "http", ceiling: null, contributors: [], sandboxEnabled: true };

Deno.test("personal store: each person reads and writes only their own; the owner reads all", () => {
  const personal = (kind: "memory_read" | "memory_write", person: string): Action => ({
    kind,
    store: "personal",
    person,
  });
  for (const trust of TRUST_LEVELS) {
    const bob = { name: "bob", trust };
    const ownRead = decide(bob, DM, personal("memory_read", "bob"));
    const ownWrite = decide(bob, DM, personal("memory_write", "bob"));
    strictEqual(ownRead.allowed, trust !== "public", `${trust} reads own`);
    strictEqual(ownWrite.allowed, trust !== "public", `${trust} writes own`);
    const otherRead = decide(bob, DM, personal("memory_read", "carol"));
    strictEqual(otherRead.allowed, trust === "owner", `${trust} reads carol's`);
    strictEqual(
      otherRead.rule,
      trust === "owner"
        ? "memory.personal.owner_reads"
        : trust === "public"
        ? "memory.personal.denied"
        : "memory.personal.not_yours",
    );
    strictEqual(decide(bob, DM, personal("memory_write", "carol")).allowed, false);
    // A group hears the reply: no personal store there, not even one's own.
    const group: Situation = { ...DM, ceiling: "owner" };
    const inGroup = decide(bob, group, personal("memory_read", "bob"));
    strictEqual(inGroup.allowed, false);
    if (trust !== "public") strictEqual(inGroup.rule, "memory.personal.group_chat");
  }
  // Without a person, nobody's store is meant: denied.
  strictEqual(
    decide({ name: "o", trust: "owner" }, DM, { kind: "memory_read", store: "personal" }).rule,
    "memory.personal.no_person",
  );
});

Deno.test("property: a personal store is read only by its person and an owner turn", () => {
  fc.assert(
    fc.property(
      trustArb,
      situationArb,
      fc.constantFrom("bob", "carol"),
      fc.constantFrom("bob", "carol"),
      (trust, situation, name, person) => {
        const d = decide({ name, trust }, situation, {
          kind: "memory_read",
          store: "personal",
          person,
        });
        if (!d.allowed) return;
        ok(name === person || d.effectiveTrust === "owner", `${name} read ${person}'s`);
        strictEqual(situation.ceiling, null);
        const write = decide({ name, trust }, situation, {
          kind: "memory_write",
          store: "personal",
          person,
        });
        if (write.allowed) strictEqual(name, person);
      },
    ),
    { numRuns: 3000 },
  );
});

Deno.test("memory_forget: only the author, only from a turn as trusted as the one that wrote it", () => {
  const entry: MemoryEntryRef = { store: "shared", author: "bob", trust: "inner" };
  const bob = { name: "bob", trust: "inner" as const };
  const forget = (who: Principal, situation: Situation, e = entry) =>
    decide(who, situation, { kind: "memory_forget", entry: e });
  strictEqual(forget(bob, DM).rule, "memory.forget.own_entry");
  strictEqual(forget({ name: "dave", trust: "inner" }, DM).rule, "memory.forget.not_author");
  strictEqual(forget({ name: "bob", trust: "owner" }, DM).allowed, true);
  // Bob's turn, lowered by what it read from a familiar contact, may not erase his inner note.
  const tainted = { ...DM, contributors: ["familiar" as const] };
  strictEqual(forget(bob, tainted).allowed, false);
  // Nor may it forget what it could not read.
  strictEqual(
    forget(bob, DM, { store: "private", author: "bob", trust: "inner" }).rule,
    "memory.forget.memory.private.denied",
  );
  // A personal entry: only its own person's, and never in a group.
  const note: MemoryEntryRef = { store: "personal", person: "bob", author: "bob", trust: "inner" };
  strictEqual(forget(bob, DM, note).allowed, true);
  strictEqual(forget(bob, { ...DM, ceiling: "owner" }, note).allowed, false);
});
