/**
 * A group turn's tool calls: they see the group's directory, and one that `authorize()` would
 * place on the host is refused (fail closed) instead of running in the owner's workspace.
 */
import { join } from "node:path";
import { assertEquals, assertMatch } from "../assert.ts";
import { parseConfig } from "../../src/config/config.ts";
import { ToolExecutor } from "../../src/tools/tool_executor.ts";
import { commandResult } from "../fixtures/command_result.ts";

Deno.test("executor: a group call is never run on the host, and runs in the group's directory", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-group-scope-" }));
  try {
    const config = parseConfig('[agent]\nworkspace = "ws"\n', join(dir, "coop.toml"), dir);
    const ran: string[] = [];
    const executor = new ToolExecutor(config, {
      env: { PATH: "/usr/bin" },
      sandbox: (policy) => {
        ran.push(policy.workspace);
        return Promise.resolve(commandResult({ stdout: "ok\n" }));
      },
      host: () => {
        ran.push("HOST");
        return Promise.resolve(commandResult({ stdout: "host\n" }));
      },
    });
    const call = {
      tool: "bash",
      args: { command: "id" },
      groupDir: "group-family",
    };
    const owner = { name: "alice", trust: "owner" as const };
    const onHost = await executor.call({
      ...call,
      principal: owner,
      situation: { channel: "telegram", ceiling: null, contributors: [] },
    });
    assertEquals(onHost.isError, true);
    assertMatch(onHost.content, /a group turn never runs on the host/);
    const sandboxed = await executor.call({
      ...call,
      principal: owner,
      situation: { channel: "telegram", ceiling: "inner", contributors: [] },
    });
    assertEquals(sandboxed.isError, false, sandboxed.content);
    assertEquals(ran, [join(dir, "ws", "group-family")]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
