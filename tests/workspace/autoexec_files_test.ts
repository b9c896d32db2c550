/**
 * ATTACKS F23, F27, "the owner is told": what `autoexecFilesIn` lists for `coop check`, and what
 * the executor does after a non-owner's call — neutralises git's traps, reports other auto-run
 * files, says so in the tool result, and keeps looking back when a scan could not see everything.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { autoexecFilesIn } from "../../src/workspace/autoexec_files.ts";
import { parseConfig } from "../../src/config/config.ts";
import { ToolExecutor } from "../../src/tools/tool_executor.ts";
import { commandResult } from "../fixtures/command_result.ts";
import { userToolCall } from "../fixtures/user_tool_call.ts";
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

/** A minimal git directory (what git's own discovery recognises). */
function gitDir(path: string, config: string): void {
  write(join(path, "HEAD"), "ref: refs/heads/main\n");
  Deno.mkdirSync(join(path, "objects"), { recursive: true });
  Deno.mkdirSync(join(path, "refs"), { recursive: true });
  write(join(path, "config"), config);
}

Deno.test("autoexecFilesIn: hooks, risky git config, .envrc, VS Code, pre-commit — any depth", () =>
  withDir(async (dir) => {
    write(join(dir, ".envrc"), "export A=1");
    gitDir(join(dir, "app", ".git"), "[core]\n\tfsmonitor = x\n");
    write(join(dir, "app", ".git", "hooks", "post-checkout"), "#!/bin/sh\n", 0o755);
    write(join(dir, "app", ".git", "hooks", "pre-commit.sample"), "#!/bin/sh\n", 0o755);
    gitDir(join(dir, "lib", ".git"), "[core]\n\tbare = false\n"); // harmless
    write(join(dir, "web", ".vscode", "tasks.json"), "{}");
    write(join(dir, "deep", "er", "still", ".envrc"), "x");
    write(join(dir, "deep", ".pre-commit-config.yaml"), "repos: []");
    Deno.symlinkSync("/", join(dir, "root")); // never followed
    const found = (await autoexecFilesIn(dir)).map((f) => [f.path.slice(dir.length + 1), f.what]);
    deepStrictEqual(found.sort(), [
      [".envrc", "direnv (.envrc)"],
      ["app/.git/config", "git config sets core.fsmonitor"],
      ["app/.git/hooks/post-checkout", 'git hook "post-checkout"'],
      ["deep/.pre-commit-config.yaml", "pre-commit (its hooks run what this file names)"],
      ["deep/er/still/.envrc", "direnv (.envrc)"],
      ["web/.vscode/tasks.json", "VS Code tasks"],
    ]);
  }));

Deno.test("autoexecFilesIn(changedSince): only what changed since, by ctime (touch -d does not hide)", () =>
  withDir(async (dir) => {
    write(join(dir, ".envrc"), "old");
    const past = new Date(Date.now() - 3_600_000);
    Deno.utimeSync(join(dir, ".envrc"), past, past);
    // utime itself changes ctime: the file counts as changed now, whatever mtime says.
    strictEqual((await autoexecFilesIn(dir, { changedSince: Date.now() - 60_000 })).length, 1);
    strictEqual((await autoexecFilesIn(dir, { changedSince: Date.now() + 60_000 })).length, 0);
  }));

Deno.test("autoexecFilesIn: a workspace too large to check says so", () =>
  withDir(async (dir) => {
    for (let i = 0; i < 1100; i++) Deno.writeTextFileSync(join(dir, `f${i}`), "");
    const found = await autoexecFilesIn(dir, { maxEntries: 1000 });
    ok(
      /not fully checked \(the workspace has more than 1000 entries/.test(found[0]?.what),
      found[0]?.what,
    );
  }));

const CONFIG = usersToml([["alice", "owner"], [
  "bob",
  "inner",
  "[users.sandbox]\nworkspace_scan_limit = 1000\n",
]]);

Deno.test("the executor neutralises what a non-owner's call left for git, tells, and reports the rest", () =>
  withDir(async (dir) => {
    const config = parseConfig(CONFIG, join(dir, "coop.toml"), dir);
    const bobDir = join(dir, "ws", "bob");
    write(join(bobDir, "old", ".envrc"), "from before");
    // ctime cannot be set back: wait out the scan's clock slack (1 s) instead.
    await new Promise((r) => setTimeout(r, 1_300));
    const executor = new ToolExecutor(config, {
      sandbox: (policy) => {
        // What a command could do inside: a hook and core.fsmonitor in a repository it made.
        gitDir(join(policy.workspace, "repo", ".git"), "[core]\n\tfsmonitor = touch /tmp/x\n");
        write(join(policy.workspace, "repo", ".git", "hooks", "post-merge"), "#!/bin/sh\n", 0o755);
        return Promise.resolve(commandResult({ stdout: "made\n" }));
      },
      sandboxGate: () => Promise.resolve(null),
    });
    const ran = await executor.call(
      userToolCall(config, "bob", { tool: "bash", args: { command: "make-a-repo" } }),
    );
    deepStrictEqual(ran.gitNeutralised?.map((n) => [n.path.slice(bobDir.length + 1), n.keys]), [
      ["repo/.git/config", ["core.fsmonitor"]],
      ["repo/.git/hooks/post-merge", ["post-merge"]],
    ]);
    strictEqual(ran.autoexec, undefined, "neutralised, so not listed again");
    ok(ran.content.startsWith("made\n"), ran.content);
    ok(ran.content.includes("[coop] Disabled git settings this command left"), ran.content);
    ok(ran.content.includes("/work/repo/.git/config (core.fsmonitor:"), ran.content);
    const wrote = await executor.call(
      userToolCall(config, "bob", {
        tool: "write_file",
        args: { path: ".vscode/tasks.json", content: "{}" },
      }),
    );
    deepStrictEqual(wrote.autoexec?.map((f) => f.what), ["VS Code tasks"]);
    const read = await executor.call(
      userToolCall(config, "bob", { tool: "read_file", args: { path: ".vscode/tasks.json" } }),
    );
    strictEqual(read.autoexec, undefined, "reading writes nothing");
    const owner = await executor.call(
      userToolCall(config, "alice", {
        tool: "write_file",
        args: { path: ".envrc", content: "mine" },
      }),
    );
    strictEqual(owner.autoexec, undefined, "the owner's own files are not reported");
  }));

Deno.test("a trap planted while a scan could not see everything is found once it can", () =>
  withDir(async (dir) => {
    const config = parseConfig(CONFIG, join(dir, "coop.toml"), dir);
    const bobDir = join(dir, "ws", "bob");
    let step = 0;
    const executor = new ToolExecutor(config, {
      sandbox: (policy) => {
        const filler = join(policy.workspace, "filler");
        if (step++ === 0) {
          // Past bob's limit of 1000 entries in one directory, with a trap below it.
          for (let i = 0; i < 1100; i++) write(join(filler, `f${i}`), "");
          gitDir(join(filler, "zz", ".git"), "[alias]\n\tst = !touch /tmp/x\n");
        } else {
          for (let i = 0; i < 1100; i++) Deno.removeSync(join(filler, `f${i}`));
        }
        return Promise.resolve(commandResult());
      },
      sandboxGate: () => Promise.resolve(null),
    });
    const first = await executor.call(
      userToolCall(config, "bob", { tool: "bash", args: { command: "fill" } }),
    );
    ok(first.workspaceUnverified?.[0].includes("more than 1000 entries"), first.content);
    ok(first.content.includes("could not be fully checked"), first.content);
    strictEqual(first.gitNeutralised, undefined, "the trap was behind the limit");
    // The next call, a second later, does not touch the trap: its own window would miss it.
    await new Promise((r) => setTimeout(r, 1_100));
    deepStrictEqual(await autoexecFilesIn(bobDir, { changedSince: Date.now() }), []);
    const second = await executor.call(
      userToolCall(config, "bob", { tool: "bash", args: { command: "tidy" } }),
    );
    strictEqual(second.workspaceUnverified, undefined, "complete again");
    deepStrictEqual(second.gitNeutralised?.map((n) => n.path.slice(bobDir.length + 1)), [
      "filler/zz/.git/config",
    ]);
  }));
