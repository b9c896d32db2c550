/**
 * Memory per person: two `inner` users each keep a personal memory through the real executor
 * and tools; neither finds the other's by search nor by id, nor can forget it; the owner can read
 * both by id and list them; a group chat sees no personal memory at all.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseConfig } from "../../src/config/config.ts";
import { MemoryDatabase } from "../../src/state/memory_store.ts";
import { migrate } from "../../src/state/state_db.ts";
import { type ToolCall, ToolExecutor } from "../../src/tools/tool_executor.ts";
import type { TrustLevel } from "../../src/trust/trust_level.ts";
import { usersToml } from "../fixtures/users_toml.ts";

async function withMemory(
  fn: (
    call: (c: Partial<ToolCall> & Pick<ToolCall, "tool" | "args">) => ReturnType<
      ToolExecutor["call"]
    >,
    memories: MemoryDatabase,
  ) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "coop-personal-" });
  const db = new DatabaseSync(":memory:");
  migrate(db);
  const memories = new MemoryDatabase(db);
  try {
    const config = parseConfig(
      usersToml([["alice", "owner"], ["bob", "inner"], ["dave", "inner"]]),
      join(dir, "coop.toml"),
      dir,
    );
    const executor = new ToolExecutor(config, {
      env: {},
      sandbox: () => Promise.reject(new Error("memory tools must not reach the sandbox")),
      host: () => Promise.reject(new Error("memory tools must not reach the host")),
      memory: memories,
    });
    await fn((c) =>
      executor.call({
        principal: { name: "bob", trust: "inner" },
        situation: { channel: "http", ceiling: null, contributors: [] },
        ...c,
      }), memories);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

const as = (name: string, trust: TrustLevel = "inner") => ({ principal: { name, trust } });

Deno.test("personal memory: two inner users cannot read each other's, by search or by id", async () => {
  await withMemory(async (call, memories) => {
    const bobWrite = await call({
      ...as("bob"),
      tool: "memory_write",
      args: { store: "personal", text: "my locker code is 1234" },
    });
    match(bobWrite.content, /remembered in personal \(memory #1\)/);
    const daveWrite = await call({
      ...as("dave"),
      tool: "memory_write",
      args: { store: "personal", text: "my locker code is 9876" },
    });
    match(daveWrite.content, /remembered in personal \(memory #2\)/);

    // Each finds their own, and only their own.
    const bobSearch = await call({
      ...as("bob"),
      tool: "memory_search",
      args: { query: "locker" },
    });
    match(bobSearch.content, /1 match\(es\) \(searched: shared, social, personal\)/);
    match(bobSearch.content, /1234/);
    ok(!bobSearch.content.includes("9876"), bobSearch.content);
    deepStrictEqual(bobSearch.memoryRead?.map((m) => m.id), [1]);
    const daveSearch = await call({
      ...as("dave"),
      tool: "memory_search",
      args: { query: "locker code" },
    });
    ok(daveSearch.content.includes("9876") && !daveSearch.content.includes("1234"));

    // By id: the other's answers exactly like a memory that does not exist.
    const bobGetsDave = await call({ ...as("bob"), tool: "memory_get", args: { id: 2 } });
    strictEqual(bobGetsDave.isError, true);
    strictEqual(
      bobGetsDave.content,
      "memory_get: there is no memory #2 this conversation may read",
    );
    const bobGetsNothing = await call({ ...as("bob"), tool: "memory_get", args: { id: 99 } });
    strictEqual(
      bobGetsNothing.content,
      "memory_get: there is no memory #99 this conversation may read",
    );
    strictEqual(bobGetsDave.memoryRead, undefined, "nothing was read");
    const daveGetsBob = await call({ ...as("dave"), tool: "memory_get", args: { id: 1 } });
    strictEqual(daveGetsBob.isError, true);
    const bobGetsOwn = await call({ ...as("bob"), tool: "memory_get", args: { id: 1 } });
    match(bobGetsOwn.content, /^\[#1 personal, \d{4}-\d\d-\d\d, by bob\] my locker code is 1234$/);

    // Nor can either forget the other's; each may forget their own.
    const bobForgetsDave = await call({ ...as("bob"), tool: "memory_forget", args: { id: 2 } });
    strictEqual(bobForgetsDave.isError, true);
    ok(memories.get(2), "dave's memory is still there");

    // The owner reads both by id, and the owner's listing shows both with their provenance.
    for (const id of [1, 2]) {
      const owner = await call({ ...as("alice", "owner"), tool: "memory_get", args: { id } });
      strictEqual(owner.isError, false, owner.content);
    }
    deepStrictEqual(
      memories.list({ store: "personal" }).map((m) => [m.id, m.person, m.author, m.channel]),
      [[2, "dave", "dave", "http"], [1, "bob", "bob", "http"]],
    );
    // The owner's own search covers the owner's personal store, not everyone's.
    const ownerSearch = await call({
      ...as("alice", "owner"),
      tool: "memory_search",
      args: { query: "locker" },
    });
    match(ownerSearch.content, /no memories match/);

    const bobForgetsOwn = await call({ ...as("bob"), tool: "memory_forget", args: { id: 1 } });
    strictEqual(bobForgetsOwn.content, "forgot memory #1");
    strictEqual(memories.get(1), null);
  });
});

Deno.test("personal memory: not in a group chat, and a lowered turn cannot forget", async () => {
  await withMemory(async (call, memories) => {
    await call({ tool: "memory_write", args: { store: "personal", text: "pin 2468" } });
    await call({ tool: "memory_write", args: { store: "shared", text: "bob likes tea" } });
    const group = { channel: "telegram", ceiling: "inner" as const, contributors: [] };
    const search = await call({ situation: group, tool: "memory_search", args: { query: "pin" } });
    match(search.content, /no memories match \(searched: shared, social\)/);
    const write = await call({
      situation: group,
      tool: "memory_write",
      args: { store: "personal", text: "x" },
    });
    match(write.content, /rule memory\.personal\.group_chat/);
    // A turn lowered by something a familiar contact wrote cannot erase Bob's inner-level note.
    const tainted = { channel: "http", ceiling: null, contributors: ["familiar" as const] };
    const forget = await call({ situation: tainted, tool: "memory_forget", args: { id: 1 } });
    strictEqual(forget.isError, true);
    match(forget.content, /memory #1 may not be forgotten here \(rule memory\.forget\.less_/);
    strictEqual(memories.list().length, 2);
  });
});
