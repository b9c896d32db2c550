/**
 * runTurn with the real ToolExecutor (fake sandbox runner, real host runner) and a real
 * provider speaking to a scripted loopback server.
 */
import { join } from "node:path";
import { runTurn } from "../../src/agent/agent_loop.ts";
import { createProvider } from "../../src/agent/provider_registry.ts";
import { allowedTools, executorTool } from "../../src/gateway/agent_tools.ts";
import { TurnTaint } from "../../src/gateway/turn_taint.ts";
import type { Principal } from "../../src/trust/authorization.ts";
import { parseConfig } from "../../src/config/config.ts";
import { ToolExecutor } from "../../src/tools/tool_executor.ts";
import type { ExecOptions } from "../../src/sandbox/mod.ts";
import { assert, assertEquals } from "../assert.ts";
import { commandResult } from "../fixtures/command_result.ts";
import { usersToml } from "../fixtures/users_toml.ts";
import { withScriptedServer } from "./scripted_server.ts";
import { WIRE_FORMATS } from "./wire_formats.ts";

const CONFIG = usersToml([["alice", "owner"], ["bob", "full"], ["carol", "familiar"]]);

const SANDBOXED_ID = commandResult({
  stdout: "cat: can't open '/etc/shadow': No such file or directory\nuid=0(root) gid=0(root)\n",
  durationMs: 3,
});

const situation = { channel: "http", ceiling: null, contributors: [], sandboxEnabled: true };

async function withExecutor(
  fn: (executor: ToolExecutor, sandboxCalls: Array<[string[], ExecOptions]>) => Promise<void>,
  sandboxed: () => Promise<typeof SANDBOXED_ID> = () => Promise.resolve(SANDBOXED_ID),
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-agent-" }));
  const config = parseConfig(CONFIG, join(dir, "coop.toml"), dir);
  const sandboxCalls: Array<[string[], ExecOptions]> = [];
  const executor = new ToolExecutor(config, {
    env: { PATH: "/usr/bin:/bin" },
    sandbox: (_policy, argv, options) => {
      sandboxCalls.push([argv, options]);
      return sandboxed();
    },
  });
  try {
    await fn(executor, sandboxCalls);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

async function offered(
  fn: (names: (trust: Principal["trust"], ceiling?: Principal["trust"]) => string[]) => void,
): Promise<void> {
  await withExecutor((executor) => {
    fn((trust, ceiling) =>
      allowedTools(executor, { name: "u", trust }, { ...situation, ceiling: ceiling ?? null })
        .map((t) => `${t.name}${t.sandboxed ? "🔒" : ""}`)
    );
    return Promise.resolve();
  });
}

for (const format of WIRE_FORMATS) {
  Deno.test(`${format.kind}: bob's bash runs in the sandbox and its output goes back`, async () => {
    const command = "cat /etc/shadow; ls /home; id";
    const script = [
      format.toolCall("call_7", "bash", [
        JSON.stringify({ command }).slice(0, 9),
        JSON.stringify({ command }).slice(9),
      ]),
      format.text(["No shadow file; I am root only inside the sandbox."]),
    ];
    await withScriptedServer(script, async (server) => {
      await withExecutor(async (executor, sandboxCalls) => {
        const bob: Principal = { name: "bob", trust: "full" };
        const result = await runTurn({
          provider: createProvider({
            name: "p",
            kind: format.kind,
            base_url: format.baseUrl(server.url),
          }),
          model: "m",
          system: "sys",
          history: [],
          userText: "who are you?",
          tools: allowedTools(executor, bob, situation),
          executeTool: executorTool(executor, { taint: new TurnTaint(bob, situation) }),
          maxIterations: 5,
        });
        assertEquals(sandboxCalls.length, 1);
        assertEquals(sandboxCalls[0][0], ["/bin/sh", "-c", command]);
        assert(sandboxCalls[0][1].signal instanceof AbortSignal, "the turn's signal reaches exec");
        const expected = SANDBOXED_ID.stdout.replace(/\n$/, "") + "\n[exit code 0]";
        assertEquals(
          format.messages(server.requests[1].body).at(-1),
          format.wireToolResult("call_7", expected, false),
        );
        assertEquals(result.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
      });
    });
  });
}

Deno.test("tools offered follow authorize(): public none, familiar no bash, owner on host", async () => {
  await offered((names) => {
    assertEquals(names("public"), []);
    assertEquals(names("familiar"), ["read_file🔒", "send_file🔒"]);
    const inner = ["bash🔒", "exec🔒", "read_file🔒", "write_file🔒", "edit_file🔒", "send_file🔒"];
    assertEquals(names("inner"), inner);
    assertEquals(names("full"), inner);
    assertEquals(names("owner"), [
      "bash",
      "exec",
      "read_file",
      "write_file",
      "edit_file",
      "send_file",
    ]);
    assertEquals(names("owner", "familiar"), ["read_file🔒", "send_file🔒"]);
  });
  await withExecutor((executor) => {
    const [first] = allowedTools(executor, { name: "x", trust: "owner" }, situation);
    assertEquals(first.parameters.$schema, undefined);
    assertEquals(first.parameters.type, "object");
    return Promise.resolve();
  });
});

Deno.test("carol (familiar) is offered no bash, and a bash call anyway never runs", async () => {
  const format = WIRE_FORMATS[0];
  const script = [
    format.toolCall("t1", "bash", ['{"command":"id"}']),
    format.text(["I cannot run commands for you."]),
  ];
  await withScriptedServer(script, async (server) => {
    await withExecutor(async (executor, sandboxCalls) => {
      const carol: Principal = { name: "carol", trust: "familiar" };
      const result = await runTurn({
        provider: createProvider({ name: "p", kind: format.kind, base_url: server.url }),
        model: "m",
        system: "sys",
        history: [],
        userText: "run id",
        tools: allowedTools(executor, carol, situation),
        executeTool: executorTool(executor, { taint: new TurnTaint(carol, situation) }),
        maxIterations: 5,
      });
      assertEquals(format.toolNames(server.requests[0].body), ["read_file", "send_file"]);
      assertEquals(sandboxCalls.length, 0);
      assertEquals(result.tools, [{ name: "bash", sandboxed: false, exitCode: null }]);
    });
  });
});

Deno.test("a bash call whose sandbox could not start is reported as not run, with no exit code", async () => {
  const format = WIRE_FORMATS[0];
  const script = [
    format.toolCall("t1", "bash", ['{"command":"id"}']),
    format.text(["It did not run."]),
  ];
  const refused = () => Promise.reject(new Error("clone3: Operation not permitted"));
  await withScriptedServer(script, async (server) => {
    await withExecutor(async (executor, sandboxCalls) => {
      const bob: Principal = { name: "bob", trust: "full" };
      const events: unknown[] = [];
      const result = await runTurn({
        provider: createProvider({ name: "p", kind: format.kind, base_url: server.url }),
        model: "m",
        system: "sys",
        history: [],
        userText: "run id",
        tools: allowedTools(executor, bob, situation),
        executeTool: executorTool(executor, { taint: new TurnTaint(bob, situation) }),
        maxIterations: 5,
        onEvent: (e) => e.type === "tool_end" && events.push(e),
      });
      assertEquals(sandboxCalls.length, 1, "the sandbox was asked");
      assertEquals(result.tools, [{ name: "bash", sandboxed: false, exitCode: null }]);
      assertEquals(events, [
        { type: "tool_end", name: "bash", sandboxed: false, exitCode: null, isError: true },
      ]);
      const told = JSON.stringify(format.messages(server.requests[1].body).at(-1));
      assert(told.includes("the sandbox could not start, so the command did not run"), told);
    }, refused);
  });
});

Deno.test("cancelling the owner's turn kills the host command", async () => {
  const format = WIRE_FORMATS[1];
  const script = [format.toolCall("t1", "bash", ['{"command":"sleep 30"}'])];
  await withScriptedServer(script, async (server) => {
    await withExecutor(async (executor) => {
      const alice: Principal = { name: "alice", trust: "owner" };
      const controller = new AbortController();
      const started = performance.now();
      const result = await runTurn({
        provider: createProvider({
          name: "p",
          kind: format.kind,
          base_url: format.baseUrl(server.url),
        }),
        model: "m",
        system: "sys",
        history: [],
        userText: "wait",
        tools: allowedTools(executor, alice, { ...situation, channel: "terminal" }),
        executeTool: executorTool(executor, {
          taint: new TurnTaint(alice, { ...situation, channel: "terminal" }),
        }),
        maxIterations: 5,
        signal: controller.signal,
        onEvent: (e) => {
          if (e.type === "tool_start") setTimeout(() => controller.abort(), 100);
        },
      });
      assert(performance.now() - started < 10_000, "sleep 30 was killed");
      assertEquals(result.stopReason, "cancelled");
      assertEquals(result.tools, [{ name: "bash", sandboxed: false, exitCode: 137 }]);
    });
  });
});
