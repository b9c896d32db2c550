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

Deno.test("leaks: a file a non-owner's send_file sends carries markers, not the key", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-leak-file-" }));
  try {
    await Deno.mkdir(`${dir}/ws/bob`, { recursive: true, mode: 0o700 });
    await Deno.writeTextFile(`${dir}/ws/bob/keys.txt`, `id=${AWS}\nplain line\n`);
    await Deno.writeTextFile(`${dir}/ws/bob/notes.txt`, "nothing secret\n");
    // What Windows PowerShell's Out-File writes: UTF-16LE with a byte-order mark, and without.
    const utf16 = (text: string, bom: boolean) =>
      new Uint8Array([
        ...(bom ? [0xff, 0xfe] : []),
        ...[...text].flatMap((c) => [c.charCodeAt(0), 0]),
      ]);
    await Deno.writeFile(`${dir}/ws/bob/keys16.txt`, utf16(`id=${AWS}\r\n`, true));
    await Deno.writeFile(`${dir}/ws/bob/keys16nobom.txt`, utf16(`id=${AWS}\r\n`, false));
    const config = parseConfig(
      usersToml([["alice", "owner"], ["bob", "inner"]]),
      `${dir}/coop.toml`,
      dir,
    );
    const executor = new ToolExecutor(config, { sandbox: () => Promise.reject("unused") });
    const leaks = new LeakGuard(config, []);
    const taint = TurnTaint.fromHistory({ name: "bob", trust: "inner" }, {
      channel: "telegram",
      ceiling: null,
    }, []);
    const files: { name: string; bytes: Uint8Array }[] = [];
    const bob = executorTool(executor, { taint, leaks, files: files as never });
    const signal = new AbortController().signal;
    for (const path of ["keys.txt", "notes.txt", "keys16.txt", "keys16nobom.txt"]) {
      const sent = await bob("send_file", { path }, signal);
      assert(!sent.isError, sent.content);
    }
    const texts = files.slice(0, 2).map((f) => new TextDecoder().decode(f.bytes));
    assertEquals(texts, ["id=[redacted: aws access key id]\nplain line\n", "nothing secret\n"]);
    // Sent in their own encoding, the key replaced: before, read as UTF-8, nothing matched.
    assertEquals(files[2].bytes.subarray(0, 2), new Uint8Array([0xff, 0xfe]), "the mark is kept");
    const redacted16 = "id=[redacted: aws access key id]\r\n";
    assertEquals(new TextDecoder("utf-16le").decode(files[2].bytes), redacted16);
    assertEquals(new TextDecoder("utf-16le").decode(files[3].bytes), redacted16);
    assertEquals(files[3].bytes[0], "i".charCodeAt(0), "no mark added where there was none");
    assertEquals(leaks.status().byPath, { sent_file: 3 });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
