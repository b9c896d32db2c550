/**
 * ATTACKS F23, "owner warned about other auto-exec files": what `autoexecFilesIn` finds, that
 * the executor reports what a non-owner's call wrote, and (with the real sandbox) a repository
 * created inside it with a hook and `core.fsmonitor`.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { autoexecFilesIn, gitProgramKeys } from "../../src/gateway/autoexec_files.ts";
import { type CoopConfig, parseConfig } from "../../src/gateway/config.ts";
import { SandboxExecutor, type ToolCall } from "../../src/gateway/sandbox_executor.ts";
import { commandResult } from "../fixtures/command_result.ts";
import { usersToml } from "../fixtures/users_toml.ts";

async function withDir(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-autoexec-" }));
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function write(path: string, text: string, mode = 0o644): void {
  Deno.mkdirSync(join(path, ".."), { recursive: true });
  Deno.writeTextFileSync(path, text, { mode });
}

Deno.test("gitProgramKeys: the keys that make git run a program, and nothing else", () => {
  const config = `[core]
\trepositoryformatversion = 0
\tfsmonitor = touch /tmp/x
\tPager = less
[alias]
\tst = status
\tpwn = !sh -c 'id'
[filter "lfs"]
\tclean = git-lfs clean -- %f
\trequired = true
[includeIf "gitdir:~/x/"]
\tpath = ../evil.inc
[remote "origin"]
\turl = https://example.com/r.git
`;
  deepStrictEqual(gitProgramKeys(config), [
    "core.fsmonitor",
    "core.pager",
    "alias.pwn",
    "filter.lfs.clean",
    "includeif.gitdir:~/x/.path",
  ]);
  deepStrictEqual(gitProgramKeys("[core]\n\tbare = false\n"), []);
});

Deno.test("autoexecFilesIn: hooks, risky git config, .envrc and VS Code files, top and one down", () =>
  withDir((dir) => {
    write(join(dir, ".envrc"), "export A=1");
    write(join(dir, "app", ".git", "hooks", "post-checkout"), "#!/bin/sh\n", 0o755);
    write(join(dir, "app", ".git", "hooks", "pre-commit.sample"), "#!/bin/sh\n", 0o755);
    write(join(dir, "app", ".git", "config"), "[core]\n\tfsmonitor = x\n");
    write(join(dir, "lib", ".git", "config"), "[core]\n\tbare = false\n"); // harmless
    write(join(dir, "web", ".vscode", "tasks.json"), "{}");
    write(join(dir, "deep", "er", ".envrc"), "x"); // two levels down: not scanned
    write(join(dir, "wt", ".git"), "gitdir: ../app/.git\n"); // a worktree pointer
    Deno.symlinkSync("/", join(dir, "root")); // never followed
    const found = autoexecFilesIn(dir).map((f) => [f.path.slice(dir.length + 1), f.what]);
    deepStrictEqual(found.sort(), [
      [".envrc", "direnv (.envrc)"],
      ["app/.git/config", "git config sets core.fsmonitor"],
      ["app/.git/hooks/post-checkout", 'git hook "post-checkout"'],
      ["web/.vscode/tasks.json", "VS Code tasks"],
    ]);
  }));

Deno.test("autoexecFilesIn(changedSince): only what changed since, by ctime (touch -d does not hide)", () =>
  withDir((dir) => {
    write(join(dir, ".envrc"), "old");
    const past = new Date(Date.now() - 3_600_000);
    Deno.utimeSync(join(dir, ".envrc"), past, past);
    // utime itself changes ctime: the file counts as changed now, whatever mtime says.
    strictEqual(autoexecFilesIn(dir, { changedSince: Date.now() - 60_000 }).length, 1);
    strictEqual(autoexecFilesIn(dir, { changedSince: Date.now() + 60_000 }).length, 0);
  }));

const CONFIG = usersToml([["alice", "owner"], ["bob", "inner"]]);

function call(config: CoopConfig, name: string, tool: string, args: unknown): ToolCall {
  const user = config.users.find((u) => u.name === name)!;
  return {
    principal: { name, trust: user.trust },
    situation: { channel: "http", ceiling: null, contributors: [] },
    user,
    tool,
    args,
  };
}

Deno.test("the executor reports what a non-owner's command or file tool wrote, not older files", () =>
  withDir(async (dir) => {
    const config = parseConfig(CONFIG, join(dir, "coop.toml"), dir);
    const bobDir = join(dir, "ws", "bob");
    write(join(bobDir, "old", ".envrc"), "from before");
    // ctime cannot be set back: wait out the scan's clock slack (1 s) instead.
    await new Promise((r) => setTimeout(r, 1_300));
    const executor = new SandboxExecutor(config, {
      sandbox: (policy) => {
        // What a command could do inside: a hook in a repository it made.
        write(join(policy.workspace, "repo", ".git", "hooks", "post-merge"), "#!/bin/sh\n", 0o755);
        return Promise.resolve(commandResult());
      },
      sandboxGate: () => Promise.resolve(null),
    });
    const ran = await executor.call(call(config, "bob", "bash", { command: "make-a-repo" }));
    deepStrictEqual(ran.autoexec?.map((f) => f.path), [
      join(bobDir, "repo", ".git", "hooks", "post-merge"),
    ]);
    const wrote = await executor.call(
      call(config, "bob", "write_file", { path: ".vscode/tasks.json", content: "{}" }),
    );
    deepStrictEqual(wrote.autoexec?.map((f) => f.what), ["VS Code tasks"]);
    const read = await executor.call(
      call(config, "bob", "read_file", { path: ".vscode/tasks.json" }),
    );
    strictEqual(read.autoexec, undefined, "reading writes nothing");
    const owner = await executor.call(
      call(config, "alice", "write_file", { path: ".envrc", content: "mine" }),
    );
    strictEqual(owner.autoexec, undefined, "the owner's own files are not reported");
  }));

Deno.test({
  name: "F23 real sandbox: a repository bob creates with a hook and core.fsmonitor is reported",
  ignore: Deno.env.get("COOP_SANDBOX_TEST") !== "1",
  fn: () =>
    withDir(async (dir) => {
      await Deno.chmod(dir, 0o755); // the sandbox's uid must reach the workspace, as in use
      const config = parseConfig(CONFIG, join(dir, "coop.toml"), dir);
      const executor = new SandboxExecutor(config);
      const command =
        "git init -q repo && cd repo && git config core.fsmonitor 'touch /tmp/x' && " +
        "printf '#!/bin/sh\\n' > .git/hooks/post-checkout && chmod +x .git/hooks/post-checkout && " +
        "touch -d '2001-01-01' .git/hooks/post-checkout .git/config && echo made";
      const r = await executor.call(call(config, "bob", "bash", { command }));
      ok(r.content.startsWith("made"), r.content);
      const bobDir = join(dir, "ws", "bob");
      deepStrictEqual(r.autoexec?.map((f) => [f.path.slice(bobDir.length + 1), f.what]).sort(), [
        ["repo/.git/config", "git config sets core.fsmonitor"],
        ["repo/.git/hooks/post-checkout", 'git hook "post-checkout"'],
      ]);
    }),
});
