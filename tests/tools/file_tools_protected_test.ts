/**
 * ATTACKS F23 through the file tools: `write_file` and `edit_file` run in the gateway, on the
 * host, so the sandbox's read-only mount of `.git` does not cover them. They must refuse the
 * same paths themselves — by name at any depth, and through no symlink.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { type CoopConfig, parseConfig } from "../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../src/tools/tool_executor.ts";
import { usersToml } from "../fixtures/users_toml.ts";

const CONFIG = usersToml([
  ["alice", "owner"],
  ["bob", "inner"],
  ["dan", "full", "[users.sandbox]\nprotected_names = []\n"],
]);
const config = (dir: string) => parseConfig(CONFIG, join(dir, "coop.toml"), dir);
let users: CoopConfig["users"] = [];

function call(name: string, trust: "owner" | "inner" | "full", tool: string, args: unknown) {
  const toolCall: ToolCall = {
    principal: { name, trust },
    situation: { channel: "http", ceiling: null, contributors: [] },
    user: users.find((u) => u.name === name),
    tool,
    args,
  };
  return toolCall;
}

async function withExecutor(
  fn: (executor: ToolExecutor, ws: string) => Promise<void>,
  realSandbox = false,
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-f23-" }));
  // The sandbox's uid (an unprivileged one for a root invoker) must reach the workspace.
  if (realSandbox) await Deno.chmod(dir, 0o755);
  try {
    const parsed = config(dir);
    users = parsed.users;
    const executor = new ToolExecutor(
      parsed,
      realSandbox ? {} : { sandbox: () => Promise.reject(new Error("no sandbox in this test")) },
    );
    const ws = join(dir, "ws");
    for (const repo of ["bob", "bob/app", "bob/a/b", "dan", "."]) {
      await Deno.mkdir(join(ws, repo, ".git", "hooks"), { recursive: true });
      await Deno.writeTextFile(join(ws, repo, ".git", "config"), "[core]\n\tbare = false\n");
    }
    await fn(executor, ws);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const PLANTS = [
  [".git/config", "[core]\n\tfsmonitor = touch /tmp/pwned\n"],
  ["app/.git/hooks/post-checkout", "#!/bin/sh\ntouch /tmp/pwned\n"],
  ["a/b/.git/config", "[alias]\n\tst = !touch /tmp/pwned\n"],
  ["/work/app/.git/config", "[core]\n\tpager = touch /tmp/pwned\n"],
  ["new/.git/hooks/pre-commit", "#!/bin/sh\n"],
] as const;

Deno.test("F23: a non-owner's write_file into .git is refused at any depth", async () => {
  await withExecutor(async (executor, ws) => {
    for (const [path, content] of PLANTS) {
      const r = await executor.call(call("bob", "inner", "write_file", { path, content }));
      strictEqual(r.isError, true, `${path}: ${r.content}`);
      ok(/inside \.git, which is read-only for you/.test(r.content), r.content);
    }
    strictEqual(
      Deno.readTextFileSync(join(ws, "bob", ".git", "config")),
      "[core]\n\tbare = false\n",
    );
    deepStrictEqual([...Deno.readDirSync(join(ws, "bob", "app", ".git", "hooks"))], []);
    strictEqual(Deno.statSync(join(ws, "bob")).isDirectory, true);
    ok(!(await Deno.stat(join(ws, "bob", "new")).catch(() => null)), "nothing was created");
  });
});

Deno.test("F23: edit_file of .git/config is refused too", async () => {
  await withExecutor(async (executor, ws) => {
    const r = await executor.call(call("bob", "inner", "edit_file", {
      path: ".git/config",
      old_string: "bare = false",
      new_string: "bare = false\n\tfsmonitor = touch /tmp/pwned",
    }));
    strictEqual(r.isError, true, r.content);
    ok(/read-only for you/.test(r.content), r.content);
    strictEqual(
      Deno.readTextFileSync(join(ws, "bob", ".git", "config")),
      "[core]\n\tbare = false\n",
    );
  });
});

Deno.test("F23: a symlink planted in the workspace cannot lead a write into .git", async () => {
  await withExecutor(async (executor, ws) => {
    // What a sandboxed command can do: ln -s .git g; ln -s app/.git/hooks h.
    Deno.symlinkSync(".git", join(ws, "bob", "g"));
    Deno.symlinkSync("app/.git/hooks", join(ws, "bob", "h"));
    for (const path of ["g/config", "h/post-checkout"]) {
      const r = await executor.call(call("bob", "inner", "write_file", { path, content: "x" }));
      strictEqual(r.isError, true, `${path}: ${r.content}`);
      ok(/goes through a symbolic link/.test(r.content), r.content);
    }
    strictEqual(
      Deno.readTextFileSync(join(ws, "bob", ".git", "config")),
      "[core]\n\tbare = false\n",
    );
    deepStrictEqual([...Deno.readDirSync(join(ws, "bob", "app", ".git", "hooks"))], []);
  });
});

Deno.test("F23: ordinary writes still work; the owner and protected_names = [] may write .git", async () => {
  await withExecutor(async (executor, ws) => {
    const notes = await executor.call(
      call("bob", "inner", "write_file", { path: "notes/today.md", content: "hi" }),
    );
    strictEqual(notes.isError, false, notes.content);
    strictEqual(Deno.readTextFileSync(join(ws, "bob", "notes", "today.md")), "hi");
    const gitish = await executor.call(
      call("bob", "inner", "write_file", { path: "docs/.github/x.md", content: "ok" }),
    );
    strictEqual(gitish.isError, false, "only the exact name is protected");
    const owner = await executor.call(
      call("alice", "owner", "write_file", { path: ".git/description", content: "mine" }),
    );
    strictEqual(owner.isError, false, owner.content);
    const dan = await executor.call(
      call("dan", "full", "write_file", { path: ".git/description", content: "dan's" }),
    );
    strictEqual(dan.isError, false, dan.content);
    strictEqual(Deno.readTextFileSync(join(ws, "dan", ".git", "description")), "dan's");
  });
});

Deno.test({
  name: "F23 real sandbox: symlinks bob makes inside cannot lead his file tools into .git",
  ignore: Deno.env.get("COOP_SANDBOX_TEST") !== "1",
  fn: () =>
    withExecutor(async (executor, ws) => {
      // From inside: .git is read-only there, but a symlink to it is an ordinary new file.
      const made = await executor.call(call("bob", "inner", "bash", {
        command: "ln -s .git g && ln -s app/.git/hooks h && echo x >> .git/config; echo rc=$?",
      }));
      ok(/rc=[1-9]/.test(made.content), `.git/config is read-only inside: ${made.content}`);
      strictEqual(Deno.lstatSync(join(ws, "bob", "g")).isSymlink, true, made.content);
      for (const path of ["g/config", "h/post-checkout"]) {
        const r = await executor.call(call("bob", "inner", "write_file", { path, content: "x" }));
        strictEqual(r.isError, true, `${path}: ${r.content}`);
        ok(/goes through a symbolic link/.test(r.content), r.content);
      }
      strictEqual(
        Deno.readTextFileSync(join(ws, "bob", ".git", "config")),
        "[core]\n\tbare = false\n",
      );
      deepStrictEqual([...Deno.readDirSync(join(ws, "bob", "app", ".git", "hooks"))], []);
    }, true),
});
