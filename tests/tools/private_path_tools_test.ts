/**
 * Coop's own files stay out of every non-owner's reach — the file tools' too. The sandbox was
 * refused when its workspace held the state directory, but `read_file`, `send_file`,
 * `write_file` and `edit_file` run in the gateway and only checked that a path stays in the
 * workspace: with `workspace = "."` and `state_dir = "state"`, a paired person named "state"
 * (`coop check` sees configured users only) read the state database.
 */
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { ToolExecutor } from "../../src/tools/tool_executor.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";

Deno.test("a workspace that holds the state directory: the file tools refuse, nothing is read or written", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-private-tools-" }));
  try {
    const config = parseConfig(
      '[agent]\nworkspace = "."\nstate_dir = "state"\n',
      join(dir, "coop.toml"),
      dir,
    );
    await Deno.mkdir(join(dir, "state"));
    await Deno.writeTextFile(join(dir, "state", "coop.db"), "SQLite format 3\0 secret rows");
    const executor = new ToolExecutor(config, {
      env: {},
      sandbox: () => Promise.reject(new Error("no sandbox in this test")),
    });
    // A paired person: a principal without a [[users]] entry, named like the directory.
    const call = (tool: string, args: unknown) =>
      executor.call({
        principal: { name: "state", trust: "inner" },
        situation: { channel: "telegram", ceiling: null, contributors: [] },
        tool,
        args,
      });
    for (
      const [tool, args] of [
        ["read_file", { path: "coop.db" }],
        ["send_file", { path: "coop.db" }],
        ["write_file", { path: "coop.db", content: "x" }],
        ["edit_file", { path: "coop.db", old_text: "secret", new_text: "x" }],
      ] as const
    ) {
      const outcome = await call(tool, args);
      assert(outcome.isError, `${tool}: ${outcome.content}`);
      assertMatch(outcome.content, /refused: .*state \(Coop's own\) would be within reach/);
      assert(!outcome.content.includes("secret rows"), outcome.content);
    }
    assertEquals(
      await Deno.readTextFile(join(dir, "state", "coop.db")),
      "SQLite format 3\0 secret rows",
      "nothing was written",
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
