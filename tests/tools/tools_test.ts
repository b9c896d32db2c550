import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import type { ToolContext } from "../../src/tools/tool_contract.ts";
import { commandResult } from "../fixtures/command_result.ts";
import { runTool } from "../../src/tools/tool_contract.ts";
import { BUILTIN_TOOLS } from "../../src/tools/tool_registry.ts";

const ok0 = commandResult();

async function withContext(
  fn: (ctx: ToolContext, root: string, calls: Array<[string, number]>) => Promise<void>,
): Promise<void> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-tools-" }));
  const calls: Array<[string, number]> = [];
  const ctx: ToolContext = {
    scope: { hostRoot: root, visibleRoot: "/work" },
    defaultTimeoutMs: 5_000,
    maxTimeoutMs: 10_000,
    maxOutputChars: 300,
    runCommand: (command, { timeoutMs }) => {
      calls.push([command, timeoutMs]);
      return Promise.resolve({ ...ok0, stdout: command === "big" ? "y".repeat(5000) : "hi\n" });
    },
  };
  try {
    await fn(ctx, root, calls);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

Deno.test("write_file, read_file and edit_file round-trip inside the scope", async () => {
  await withContext(async (ctx, root) => {
    const w = await runTool(
      BUILTIN_TOOLS.write_file,
      { path: "d/a.txt", content: "one two two" },
      ctx,
    );
    strictEqual(w.isError, false);
    strictEqual(await Deno.readTextFile(join(root, "d/a.txt")), "one two two");
    const r = await runTool(BUILTIN_TOOLS.read_file, { path: "/work/d/a.txt" }, ctx);
    deepStrictEqual(r, { isError: false, content: "one two two" });
    const ambiguous = await runTool(
      BUILTIN_TOOLS.edit_file,
      { path: "d/a.txt", old_string: "two", new_string: "2" },
      ctx,
    );
    ok(ambiguous.isError);
    ok(ambiguous.content.includes("occurs 2 times"));
    const e = await runTool(
      BUILTIN_TOOLS.edit_file,
      { path: "d/a.txt", old_string: "one", new_string: "1" },
      ctx,
    );
    strictEqual(e.isError, false);
    strictEqual(await Deno.readTextFile(join(root, "d/a.txt")), "1 two two");
  });
});

Deno.test("read_file honours offset and limit and truncates head+tail", async () => {
  await withContext(async (ctx, root) => {
    await Deno.writeTextFile(join(root, "l.txt"), "a\nb\nc\nd");
    const r = await runTool(BUILTIN_TOOLS.read_file, { path: "l.txt", offset: 2, limit: 2 }, ctx);
    strictEqual(r.content, "b\nc");
    await Deno.writeTextFile(join(root, "big.txt"), "S" + "x".repeat(5000) + "E");
    const big = await runTool(BUILTIN_TOOLS.read_file, { path: "big.txt" }, ctx);
    ok(big.content.startsWith("S") && big.content.endsWith("E"));
    ok(big.content.includes("characters truncated"));
    ok(big.content.length <= 300);
  });
});

Deno.test("malformed arguments become tool errors, never exceptions", async () => {
  await withContext(async (ctx) => {
    const cases: Array<[keyof typeof BUILTIN_TOOLS, unknown, RegExp]> = [
      ["read_file", null, /invalid arguments/],
      ["read_file", "a.txt", /invalid arguments/],
      ["read_file", { path: 3 }, /"path"/],
      ["read_file", { path: "a", extra: true }, /unknown argument "extra"/],
      ["write_file", { path: "a" }, /"content"/],
      ["edit_file", { path: "a", old_string: "", new_string: "x" }, /old_string/],
      ["bash", {}, /"command"/],
      ["bash", { command: "ls", timeout: -1 }, /timeout/],
      ["bash", { command: "ls", timeout: 11 }, /at most 10 seconds/],
      ["read_file", { path: "missing.txt" }, /no such file/],
      ["read_file", { path: "../x" }, /must not contain/],
      ["edit_file", { path: "nope", old_string: "a", new_string: "b" }, /no such file/],
    ];
    for (const [tool, args, expected] of cases) {
      const result = await runTool(BUILTIN_TOOLS[tool], args, ctx);
      ok(result.isError, `${tool} ${JSON.stringify(args)} should fail`);
      ok(expected.test(result.content), `${tool}: ${result.content}`);
    }
  });
});

Deno.test("bash uses the default timeout, accepts a shorter one, and truncates output", async () => {
  await withContext(async (ctx, _root, calls) => {
    const a = await runTool(BUILTIN_TOOLS.bash, { command: "echo hi" }, ctx);
    strictEqual(a.content, "hi\n[exit code 0]");
    await runTool(BUILTIN_TOOLS.bash, { command: "echo hi", timeout: 2 }, ctx);
    deepStrictEqual(calls, [["echo hi", 5000], ["echo hi", 2000]]);
    const big = await runTool(BUILTIN_TOOLS.bash, { command: "big" }, ctx);
    ok(big.content.endsWith("[exit code 0]"));
    ok(big.content.includes("characters truncated"));
  });
});

Deno.test("bash without a runner is a tool error", async () => {
  await withContext(async (ctx) => {
    const result = await runTool(BUILTIN_TOOLS.bash, { command: "ls" }, {
      ...ctx,
      runCommand: undefined,
    });
    ok(result.isError);
    ok(result.content.includes("not available"));
  });
});
