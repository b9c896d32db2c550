import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import fc from "fast-check";
import {
  MEMORY_STORES,
  type MemoryStore,
  TRUST_LEVELS,
  type TrustLevel,
} from "../../src/trust/trust_level.ts";
import { migrate } from "../../src/state/state_db.ts";
import { ftsQuery, MemoryDatabase } from "../../src/state/memory_store.ts";
import { gatedMemory } from "../../src/tools/memory_access.ts";
import type { Situation } from "../../src/trust/authorization.ts";
import { parseConfig } from "../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../src/tools/tool_executor.ts";
import { usersToml } from "../fixtures/users_toml.ts";

function memoryDb(): { db: DatabaseSync; memories: MemoryDatabase } {
  const db = new DatabaseSync(":memory:");
  migrate(db);
  return { db, memories: new MemoryDatabase(db, () => Date.UTC(2025, 5, 1)) };
}

const direct: Situation = {
  channel: "http",
  ceiling: null,
  contributors: [],
  sandboxEnabled: true,
};

/** One memory per store, each mentioning "pancakes". */
function seed(memories: MemoryDatabase): void {
  for (const store of MEMORY_STORES) {
    memories.write({
      store,
      text: `the ${store} pancakes recipe`,
      author: "alice",
      trust: "owner",
      channel: "terminal",
    });
  }
}

Deno.test("ftsQuery quotes every word so model text is never FTS syntax", () => {
  const cases: Array<[string, string | null]> = [
    ["birthday", '"birthday"'],
    ['Bob\'s "birthday"?', '"bob" OR "s" OR "birthday"'],
    ["NOT AND OR NEAR(", '"not" OR "and" OR "or" OR "near"'],
    ["café Straße 42", '"café" OR "straße" OR "42"'],
    ["a a a", '"a"'],
    ["*** ()", null],
    ["", null],
  ];
  for (const [text, expected] of cases) strictEqual(ftsQuery(text), expected, text);
});

Deno.test("property: any search text is a valid FTS5 query (no SQL errors)", () => {
  const { db, memories } = memoryDb();
  seed(memories);
  fc.assert(
    fc.property(fc.string({ maxLength: 60 }), (text) => {
      const hits = memories.search(text, MEMORY_STORES, 5);
      ok(Array.isArray(hits));
    }),
    { numRuns: 500 },
  );
  db.close();
});

Deno.test("FTS5 search ranks, stems and filters by store", () => {
  const { db, memories } = memoryDb();
  const write = (store: MemoryStore, text: string) =>
    memories.write({ store, text, author: "bob", trust: "full", channel: "http" });
  write("shared", "Carol likes green tea");
  write("shared", "Bob's birthday is on March 3, he likes cakes");
  write("private", "the birthday present is hidden in the garage");
  write("social", "the team meets on Fridays");
  deepStrictEqual(
    memories.search("birthday cake", ["shared"], 5).map((h) => h.text),
    ["Bob's birthday is on March 3, he likes cakes"],
    "porter stemming matches cake/cakes; private is filtered out",
  );
  strictEqual(memories.search("birthday", ["private", "shared"], 5).length, 2);
  deepStrictEqual(memories.search("birthday", [], 5), []);
  strictEqual(memories.search("birthday", ["private", "shared"], 1).length, 1);
  const [hit] = memories.search("fridays", ["social"], 5);
  strictEqual(hit.author, "bob");
  strictEqual(hit.store, "social");
  strictEqual(hit.createdAt, Date.UTC(2025, 5, 1));
  strictEqual(hit.trust, "full", "a hit carries the trust its writing turn had");
  db.close();
});

Deno.test("a stored trust that names no level is read as public (fail closed)", () => {
  const { db, memories } = memoryDb();
  const id = memories.write({
    store: "social",
    text: "edited by hand",
    author: "carol",
    trust: "familiar",
    channel: "http",
  });
  db.prepare("UPDATE memories SET trust = 'superuser' WHERE id = ?").run(id);
  const [hit] = memories.search("hand", ["social"], 5);
  strictEqual(hit.trust, "public");
  db.close();
});

// Which stores each effective trust searches and writes (docs/memory.md), written by hand.
const TABLE: Array<[TrustLevel, MemoryStore[], MemoryStore[]]> = [
  //  trust       searches                          writes
  ["owner", ["private", "shared", "social"], ["private", "shared", "social"]],
  ["full", ["private", "shared", "social"], ["private"]],
  ["inner", ["shared", "social"], ["shared"]],
  ["familiar", ["social"], ["social"]],
  ["public", [], []],
];

for (const [trust, searches, writes] of TABLE) {
  Deno.test(`gated memory at ${trust}: searches ${searches.join("+") || "nothing"}, writes ${writes.join("+") || "nothing"}`, () => {
    const { db, memories } = memoryDb();
    seed(memories);
    const reported: number[] = [];
    const access = gatedMemory(memories, { name: "u", trust }, direct, (hits) => {
      reported.push(...hits.map((h) => h.id));
    });
    if (searches.length === 0) {
      let code = "";
      try {
        access.search("pancakes", 10);
      } catch (e) {
        code = (e as { code: string }).code;
      }
      strictEqual(code, "tool.memory_read_denied");
    } else {
      const result = access.search("pancakes", 10);
      // Beside the tiers, every non-public turn searches its own personal store (empty here).
      deepStrictEqual(result.searched, [...searches, "personal"]);
      deepStrictEqual(result.hits.map((h) => h.store).sort(), [...searches].sort());
      deepStrictEqual(reported, result.hits.map((h) => h.id), "every hit is reported as read");
    }
    for (const store of MEMORY_STORES) {
      let allowed = true;
      try {
        access.write(store, `note from ${trust}`);
      } catch (e) {
        allowed = false;
        strictEqual((e as { code: string }).code, "tool.memory_write_denied");
      }
      strictEqual(allowed, writes.includes(store), `${trust} → ${store}`);
    }
    const stored = db.prepare(
      "SELECT store, author, trust, channel FROM memories WHERE author = 'u'",
    )
      .all().map((r) => ({ ...r }));
    deepStrictEqual(
      stored,
      writes.map((store) => ({ store, author: "u", trust, channel: "http" })),
    );
    db.close();
  });
}

Deno.test("property: gated search never returns a memory from a store the turn's trust cannot read", () => {
  const { db, memories } = memoryDb();
  seed(memories);
  const trustArb = fc.constantFrom(...TRUST_LEVELS);
  fc.assert(
    fc.property(
      trustArb,
      fc.option(trustArb, { nil: null }),
      fc.array(trustArb, { maxLength: 3 }),
      (trust, ceiling, contributors) => {
        const situation = { ...direct, ceiling, contributors };
        const effective = [trust, ...(ceiling ? [ceiling] : []), ...contributors]
          .map((t) => TRUST_LEVELS.indexOf(t)).reduce((a, b) => Math.max(a, b));
        const readable = TABLE[effective][1];
        try {
          const { hits } = gatedMemory(memories, { name: "u", trust }, situation, () => {})
            .search("pancakes", 10);
          for (const hit of hits) {
            ok(hit.store !== "personal" && readable.includes(hit.store), `${hit.store} leaked`);
          }
        } catch (e) {
          strictEqual(readable.length, 0, String(e));
        }
      },
    ),
    { numRuns: 1000 },
  );
  db.close();
});

const CONFIG = usersToml([["alice", "owner"]]);

async function withExecutor(
  memory: boolean,
  fn: (executor: ToolExecutor, memories: MemoryDatabase) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "coop-memory-" });
  const { db, memories } = memoryDb();
  try {
    const config = parseConfig(CONFIG, join(dir, "coop.toml"), dir);
    const executor = new ToolExecutor(config, {
      env: {},
      sandbox: () => Promise.reject(new Error("memory tools must not reach the sandbox")),
      host: () => Promise.reject(new Error("memory tools must not reach the host")),
      memory: memory ? memories : undefined,
    });
    await fn(executor, memories);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function memoryCall(
  trust: TrustLevel,
  tool: string,
  args: unknown,
  ceiling: TrustLevel | null = null,
): ToolCall {
  return {
    principal: { name: "bob", trust },
    situation: { channel: "http", ceiling, contributors: [] },
    tool,
    args,
  };
}

Deno.test("executor: memory tools are offered only to principals who may use them, only when configured", async () => {
  const expected: Record<TrustLevel, boolean> = {
    owner: true,
    full: true,
    inner: true,
    familiar: true,
    public: false,
  };
  await withExecutor(true, (executor) => {
    for (const trust of TRUST_LEVELS) {
      const names = executor.toolsFor({ name: "u", trust }, direct).map((t) => t.name);
      strictEqual(names.includes("memory_search"), expected[trust], `${trust} memory_search`);
      strictEqual(names.includes("memory_write"), expected[trust], `${trust} memory_write`);
    }
    deepStrictEqual(
      executor.toolsFor({ name: "u", trust: "familiar" }, direct).map((t) => t.name),
      ["read_file", "send_file", "memory_search", "memory_write", "memory_get", "memory_forget"],
    );
    return Promise.resolve();
  });
  await withExecutor(false, (executor) => {
    const names = executor.toolsFor({ name: "u", trust: "owner" }, direct).map((t) => t.name);
    deepStrictEqual(names, ["bash", "exec", "read_file", "write_file", "edit_file", "send_file"]);
    return Promise.resolve();
  });
});

Deno.test("executor: memory_write then memory_search round-trips in the gateway", async () => {
  await withExecutor(true, async (executor) => {
    const w = await executor.call(
      memoryCall("inner", "memory_write", { store: "shared", text: "Bob prefers oat milk" }),
    );
    strictEqual(w.isError, false, w.content);
    match(w.content, /remembered in shared \(memory #1\)/);
    strictEqual(w.decision?.placement, "gateway");
    const s = await executor.call(memoryCall("familiar", "memory_search", { query: "oat milk" }));
    strictEqual(s.isError, false);
    match(
      s.content,
      /no memories match \(searched: social, personal\)/,
      "familiar cannot see shared",
    );
    const t = await executor.call(memoryCall("full", "memory_search", { query: "milk" }));
    match(
      t.content,
      /^1 match\(es\) \(searched: private, shared, social, personal\)\n\[#1 shared, \d{4}-\d\d-\d\d, by bob\] Bob prefers oat milk$/,
    );
  });
});

Deno.test("executor: a write-down is refused with the rule and the stores that are allowed", async () => {
  await withExecutor(true, async (executor, memories) => {
    const r = await executor.call(
      memoryCall("full", "memory_write", { store: "social", text: "the owner's address" }),
    );
    strictEqual(r.isError, true);
    match(
      r.content,
      /may not write to "social" \(rule memory\.social\.write_down\); it may write to: private/,
    );
    deepStrictEqual(memories.search("address", MEMORY_STORES, 5), []);
    // The owner in a group is tainted by the ceiling: no longer "the owner asks".
    const group = await executor.call(
      memoryCall("owner", "memory_write", { store: "private", text: "x" }, "familiar"),
    );
    strictEqual(group.isError, true);
    match(group.content, /rule memory\.private\.denied/);
  });
});

Deno.test("executor: memory tool errors are results, not crashes", async () => {
  const cases: Array<[boolean, TrustLevel, string, unknown, RegExp]> = [
    [true, "public", "memory_search", { query: "x" }, /not permitted at trust "public"/],
    [true, "owner", "memory_write", { store: "attic", text: "x" }, /invalid arguments: "store"/],
    [true, "owner", "memory_write", { store: "private", text: "  " }, /must not be empty/],
    [true, "owner", "memory_search", { query: "x", limit: 500 }, /invalid arguments: "limit"/],
    [false, "owner", "memory_search", { query: "x" }, /memory is not available/],
  ];
  for (const [configured, trust, tool, args, expected] of cases) {
    await withExecutor(configured, async (executor) => {
      const r = await executor.call(memoryCall(trust, tool, args));
      strictEqual(r.isError, true);
      match(r.content, expected);
    });
  }
});
