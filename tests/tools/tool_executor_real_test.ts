import { ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../src/tools/tool_executor.ts";

const ignore = Deno.env.get("COOP_SANDBOX_TEST") !== "1";

function call(name: string, trust: "owner" | "inner", tool: string, args: unknown): ToolCall {
  return {
    principal: { name, trust },
    situation: { channel: "http", ceiling: null, contributors: [] },
    tool,
    args,
  };
}

Deno.test({
  name: "real sandbox: non-owner bash cannot see coop.toml, state, other users or the host home",
  ignore,
  async fn() {
    const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-real-" }));
    // The sandbox maps to an unprivileged uid; let it traverse to the workspace like a real setup.
    await Deno.chmod(base, 0o755);
    try {
      const file = join(base, "coop.toml");
      const text = '[agent]\nworkspace = "ws"\nstate_dir = "state"\n' +
        '[[users]]\nname = "alice"\ntrust = "owner"\n[[users]]\nname = "bob"\ntrust = "inner"\n' +
        '[[users]]\nname = "carol"\ntrust = "inner"\n';
      await Deno.writeTextFile(file, text);
      await Deno.mkdir(join(base, "state"));
      await Deno.writeTextFile(join(base, "state", "sessions.db"), "state");
      await Deno.mkdir(join(base, "ws", "carol"), { recursive: true });
      await Deno.writeTextFile(join(base, "ws", "carol", "secret.txt"), "carol");
      const executor = new ToolExecutor(parseConfig(text, file, base));
      const home = Deno.env.get("HOME") ?? "/root";

      const mine = await executor.call(
        call("bob", "inner", "write_file", { path: "mine.txt", content: "bob" }),
      );
      strictEqual(mine.isError, false, mine.content);
      const own = await executor.call(
        call("bob", "inner", "bash", { command: "cat /work/mine.txt" }),
      );
      strictEqual(own.content, "bob\n[exit code 0]", "bash and file tools share one root");

      const targets = [
        file,
        join(base, "state", "sessions.db"),
        join(base, "ws", "carol", "secret.txt"),
        home,
      ];
      for (const target of targets) {
        const r = await executor.call(
          call("bob", "inner", "bash", { command: `ls -d '${target}' || cat '${target}'` }),
        );
        ok(r.isError, `${target} visible to bob: ${r.content}`);
        strictEqual(r.decision?.placement, "sandbox");
      }
      const escape = await executor.call(
        call("bob", "inner", "bash", { command: "cat ../carol/secret.txt" }),
      );
      ok(escape.isError && !escape.content.includes("carol\n"), escape.content);

      const owner = await executor.call(
        call("alice", "owner", "bash", {
          command: `cat '${file}' '${join(base, "ws", "carol", "secret.txt")}'`,
        }),
      );
      strictEqual(owner.isError, false, owner.content);
      ok(owner.content.includes("[[users]]") && owner.content.includes("carol"));
      strictEqual(owner.decision?.placement, "host");
    } finally {
      await Deno.remove(base, { recursive: true });
    }
  },
});
