/**
 * The tool paths of leak detection through the real executor and memory store: what a
 * non-owner's `memory_write` stores and what `memory_search` returns to the model carry
 * markers; the owner's own memory write on the terminal is kept as written.
 */
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals } from "../assert.ts";
import { migrate } from "../../src/state/state_db.ts";
import { MemoryDatabase } from "../../src/state/memory_store.ts";
import { parseConfig } from "../../src/config/config.ts";
import { ToolExecutor } from "../../src/tools/tool_executor.ts";
import { executorTool } from "../../src/gateway/agent_tools.ts";
import { LeakGuard } from "../../src/gateway/leak_guard.ts";
import { TurnTaint } from "../../src/gateway/turn_taint.ts";
import { usersToml } from "../fixtures/users_toml.ts";

const AWS = "AKIAIOSFODNN7EXAMPLE";

function setUp() {
  const db = new DatabaseSync(":memory:");
  migrate(db);
  const memory = new MemoryDatabase(db);
  const config = parseConfig(
    usersToml([["alice", "owner"], ["bob", "inner"]]),
    "/nonexistent/coop.toml",
    "/nonexistent",
  );
  const executor = new ToolExecutor(config, { memory, sandbox: () => Promise.reject("unused") });
  const leaks = new LeakGuard(config, []);
  const tool = (name: string, trust: "owner" | "inner", channel: string) => {
    const taint = TurnTaint.fromHistory({ name, trust }, { channel, ceiling: null }, []);
    return executorTool(executor, { taint, leaks });
  };
  return { memory, leaks, tool };
}

Deno.test("leaks: a non-owner's memory write is stored redacted; search results too", async () => {
  const { memory, leaks, tool } = setUp();
  const signal = new AbortController().signal;
  const alice = tool("alice", "owner", "terminal");
  const written = await alice("memory_write", { store: "shared", text: `aws id ${AWS}` }, signal);
  assert(!written.isError, written.content);
  const bob = tool("bob", "inner", "http");
  await bob("memory_write", { store: "shared", text: `bob saw ${AWS} today` }, signal);
  const stored = memory.search("aws bob", ["shared"], 10)
    .map((m) => m.text).sort();
  assertEquals(stored, [`aws id ${AWS}`, "bob saw [redacted: aws access key id] today"]);
  const found = await bob("memory_search", { query: "aws" }, signal);
  assert(found.content.includes("aws id [redacted: aws access key id]"), found.content);
  assert(!found.content.includes(AWS), found.content);
  assertEquals(leaks.status().byPath, { memory_write: 1, tool_result: 1 });
});
