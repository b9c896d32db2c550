/**
 * ATTACKS F23, F27 on the host side, without a sandbox: what the workspace scan neutralises
 * in repositories a call made or changed, what it leaves alone, and that what it writes git
 * reads as intended (checked with the installed git). The same traps planted from inside a real
 * sandbox, with the owner's git run on them, are in tests/sandbox/attacks/git_traps_test.ts.
 */
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DirHandle } from "../../src/workspace/dir_handle.ts";
import { scanWorkspace } from "../../src/workspace/workspace_scan.ts";

const ROOT = (Deno.uid() ?? 0) === 0;

async function withDir(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-scan-" }));
  try {
    await fn(dir);
  } finally {
    await Deno.chmod(dir, 0o755).catch(() => {});
    await new Deno.Command("chmod", { args: ["-R", "u+rwx", dir] }).output();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Runs a shell script in `cwd` with git isolated from this machine's own config. */
function sh(script: string, cwd: string): string {
  const r = new Deno.Command("sh", {
    args: ["-c", script],
    cwd,
    env: gitEnv(cwd),
    clearEnv: true,
  }).outputSync();
  const out = new TextDecoder().decode(r.stdout) + new TextDecoder().decode(r.stderr);
  if (!r.success) throw new Error(`${script}: ${out}`);
  return out;
}

function gitEnv(home: string): Record<string, string> {
  return {
    PATH: "/usr/bin:/bin",
    HOME: home,
    GIT_CONFIG_NOSYSTEM: "1",
    GIT_AUTHOR_NAME: "t",
    GIT_AUTHOR_EMAIL: "t@x",
    GIT_COMMITTER_NAME: "t",
    GIT_COMMITTER_EMAIL: "t@x",
  };
}

/** What git itself lists from a config file. */
function gitList(file: string): string[] {
  return sh(`git config --file '${file}' --list`, "/").trim().split("\n").filter(Boolean);
}

/** Waits until files made so far are older, by ctime's whole seconds, than `Date.now()`. */
async function afterThisSecond(): Promise<number> {
  await new Promise((r) => setTimeout(r, 1100 - (Date.now() % 1000)));
  return Date.now();
}

const rel = (dir: string, paths: string[]) => paths.map((p) => p.slice(dir.length + 1)).sort();

Deno.test("scan: a repository the call made keeps only safe config; traps set aside, told", () =>
  withDir((dir) => {
    const since = Date.now();
    sh(
      "git init -q app && cd app && git config user.name Bob && " +
        "git config remote.origin.url https://example.org/app.git && " +
        "git config branch.main.remote origin && git config core.fsmonitor 'touch /tmp/x' && " +
        "git config alias.st '!touch /tmp/x' && git config credential.helper '!touch /tmp/x' && " +
        "git config include.path ../evil.inc && git config remote.origin.uploadpack 'touch /tmp/x'" +
        " && printf '#!/bin/sh\\n' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit" +
        " && ln -s /bin/true .git/hooks/post-checkout",
      dir,
    );
    const original = Deno.readFileSync(join(dir, "app/.git/config"));
    const report = scanWorkspace(dir, { since, neutralise: true });
    strictEqual(report.complete, true, report.problems.join("; "));
    deepStrictEqual(rel(dir, report.neutralised.map((n) => n.path)), [
      "app/.git/config",
      "app/.git/hooks/post-checkout",
      "app/.git/hooks/pre-commit",
    ]);
    deepStrictEqual(report.neutralised[0].keys.sort(), [
      "alias.st",
      "core.fsmonitor",
      "credential.helper",
      "include.path",
      "remote.origin.uploadpack",
    ]);
    // git reads the rewrite as exactly the safe part; the original is kept byte for byte.
    deepStrictEqual(gitList(join(dir, "app/.git/config")), [
      "core.repositoryformatversion=0",
      "core.filemode=true",
      "core.bare=false",
      "core.logallrefupdates=true",
      "user.name=Bob",
      "remote.origin.url=https://example.org/app.git",
      "branch.main.remote=origin",
    ]);
    deepStrictEqual(Deno.readFileSync(join(dir, "app/.git/config.coop-disabled")), original);
    const hook = Deno.statSync(join(dir, "app/.git/hooks/pre-commit.coop-disabled"));
    strictEqual(hook.mode! & 0o111, 0, "the hook set aside is not executable");
    ok(!Deno.lstatSync(join(dir, "app/.git/hooks/pre-commit.sample")).isSymlink);
    strictEqual(
      sh("git status --porcelain=v1 -b | head -1", join(dir, "app")).trim(),
      "## No commits yet on master",
    );
    // A second scan of the same window finds nothing more to do.
    deepStrictEqual(scanWorkspace(dir, { since, neutralise: true }).neutralised, []);
  }));

Deno.test("scan: repositories at any depth — nested, bare, config.worktree, linked worktree", () =>
  withDir((dir) => {
    const since = Date.now();
    sh(
      "mkdir -p a/b/c && git init -q a/b/c && git -C a/b/c config core.pager 'touch /tmp/x' && " +
        "git init -q --bare srv.git && git -C srv.git config alias.x '!touch /tmp/x' && " +
        "git init -q wt && cd wt && git commit -q --allow-empty -m i && " +
        "git config extensions.worktreeConfig true && " +
        "git config --worktree core.fsmonitor 'touch /tmp/x' && git worktree add -q ../wt2 && " +
        "git -C ../wt2 config --worktree core.sshCommand 'touch /tmp/x' && cd .. && " +
        "git init -q sup && mkdir sup/.git/modules && " +
        "git init -q --separate-git-dir sup/.git/modules/lib sup/lib && " +
        "git -C sup/lib config core.editor 'touch /tmp/x'",
      dir,
    );
    const report = scanWorkspace(dir, { since, neutralise: true });
    // (git worktree add may copy the main worktree's config.worktree: either way it goes.)
    deepStrictEqual(
      report.neutralised.map((n) => [n.path.slice(dir.length + 1), n.keys.at(-1)]).sort(),
      [
        ["a/b/c/.git/config", "core.pager"],
        ["srv.git/config", "alias.x"],
        ["sup/.git/modules/lib/config", "core.editor"],
        ["wt/.git/config.worktree", "core.fsmonitor"],
        ["wt/.git/worktrees/wt2/config.worktree", "core.sshcommand"],
      ],
    );
    strictEqual(
      sh("git config --show-origin core.sshCommand || echo none", join(dir, "wt2")).trim(),
      "none",
    );
  }));

Deno.test("scan: pointers that lead outside the workspace are set aside; inside ones kept", () =>
  withDir((dir) => {
    const ws = join(dir, "ws");
    const outside = join(dir, "owner-repo");
    sh(`git init -q '${outside}' && mkdir ws`, dir);
    const since = Date.now();
    sh(
      `mkdir gf && echo 'gitdir: ${outside}/.git' > gf/.git && ` +
        `mkdir ln && ln -s '${outside}/.git' ln/.git && ` +
        `git init -q inner && mkdir gi && echo 'gitdir: ../inner/.git' > gi/.git && ` +
        `git init -q alt && echo '${outside}/.git/objects' > alt/.git/objects/info/alternates && ` +
        `git init -q wk && echo '${outside}/.git' > wk/.git/commondir && ` +
        `git init -q ob && rm -r ob/.git/refs && ln -s '${outside}/.git/refs' ob/.git/refs && ` +
        `git init -q hs && rm -r hs/.git/hooks && ln -s '${outside}/.git/hooks' hs/.git/hooks`,
      ws,
    );
    const report = scanWorkspace(ws, { since, neutralise: true });
    deepStrictEqual(rel(ws, report.neutralised.map((n) => n.path)), [
      "alt/.git/objects/info/alternates",
      "gf/.git",
      "hs/.git/hooks",
      "ln/.git",
      "ob/.git/refs",
      "wk/.git/commondir",
    ]);
    ok(Deno.statSync(join(ws, "gi/.git")).isFile, "a .git file into the workspace stays");
    ok(report.neutralised.every((n) => n.reason.includes(outside)), "the reason names where");
    ok(Deno.lstatSync(join(ws, "ln/.git.coop-disabled")).isSymlink, "the symlink itself moved");
    ok(Deno.statSync(join(outside, ".git/config")).isFile, "nothing outside was touched");
  }));

Deno.test("scan: what the owner made before the call is left alone", () =>
  withDir(async (dir) => {
    sh(
      "git init -q mine && git -C mine config core.pager less && " +
        "printf '#!/bin/sh\\n' > mine/.git/hooks/pre-push && chmod +x mine/.git/hooks/pre-push",
      dir,
    );
    const before = Deno.readTextFileSync(join(dir, "mine/.git/config"));
    const since = await afterThisSecond();
    sh("echo notes > notes.md && mkdir -p mine/src && echo x > mine/src/a.txt", dir);
    const report = scanWorkspace(dir, { since, neutralise: true });
    deepStrictEqual(report.neutralised, []);
    strictEqual(Deno.readTextFileSync(join(dir, "mine/.git/config")), before);
    ok(Deno.statSync(join(dir, "mine/.git/hooks/pre-push")).mode! & 0o100);
  }));

Deno.test("scan: an owner's config is followed to what the call changed (include, hooksPath, script)", () =>
  withDir(async (dir) => {
    sh(
      "git init -q mine && cd mine && mkdir -p tools hooks && echo '[user]' > shared.inc && " +
        "git config include.path ../shared.inc && git config core.hooksPath hooks && " +
        "git config core.fsmonitor tools/watch.sh && printf '#!/bin/sh\\n' > tools/watch.sh && " +
        "chmod +x tools/watch.sh",
      dir,
    );
    const since = await afterThisSecond();
    // What a sandbox could do there: none of it touches .git.
    sh(
      "printf '[core]\\n\\tpager = touch /tmp/x\\n' > shared.inc && " +
        "printf '#!/bin/sh\\ntouch /tmp/x\\n' > hooks/pre-commit && chmod +x hooks/pre-commit && " +
        "echo 'touch /tmp/x' >> tools/watch.sh",
      join(dir, "mine"),
    );
    const report = scanWorkspace(dir, { since, neutralise: true });
    deepStrictEqual(
      report.neutralised.map((n) => [n.path.slice(dir.length + 1), n.keys.join()]).sort(),
      [
        ["mine/.git/config", "core.fsmonitor"],
        ["mine/hooks/pre-commit", "pre-commit"],
        ["mine/shared.inc", "core.pager"],
      ],
    );
    // The owner's own settings that led nowhere new stay.
    const list = gitList(join(dir, "mine/.git/config"));
    ok(
      list.includes("include.path=../shared.inc") && list.includes("core.hookspath=hooks"),
      list.join(),
    );
  }));

Deno.test("scan: a config that is a symlink is set aside, and what it points at is not written", () =>
  withDir((dir) => {
    const target = join(dir, "owner.gitconfig");
    Deno.writeTextFileSync(target, "[core]\n\tpager = touch /tmp/x\n");
    const ws = join(dir, "ws");
    const since = Date.now();
    sh(
      `mkdir ws && git init -q ws/r && rm ws/r/.git/config && ln -s '${target}' ws/r/.git/config`,
      dir,
    );
    const report = scanWorkspace(ws, { since, neutralise: true });
    deepStrictEqual(report.neutralised.map((n) => n.keys), [["(symbolic link)"]]);
    ok(Deno.lstatSync(join(ws, "r/.git/config.coop-disabled")).isSymlink);
    strictEqual(Deno.readTextFileSync(target), "[core]\n\tpager = touch /tmp/x\n");
  }));

Deno.test("scan: report mode (coop check) lists, including what was set aside; changes nothing", () =>
  withDir((dir) => {
    const since = Date.now();
    sh("git init -q r && git -C r config core.fsmonitor x && echo 'gitdir: /etc' > .git", dir);
    scanWorkspace(dir, { since, neutralise: true });
    sh("git -C r config alias.x '!x'", dir);
    const report = scanWorkspace(dir, { neutralise: false });
    deepStrictEqual(report.neutralised, []);
    const found = report.findings.map((f) => [f.path.slice(dir.length + 1), f.what.split(":")[0]]);
    deepStrictEqual(found.sort(), [
      [".git.coop-disabled", "git"],
      ["r/.git/config", "git config sets alias.x"],
      ["r/.git/config.coop-disabled", "git"],
    ]);
    ok(gitList(join(dir, "r/.git/config")).includes("alias.x=!x"), "report mode wrote nothing");
  }));

Deno.test("scan: past the entry limit or too deep, the scan stops and says so", () =>
  withDir((dir) => {
    sh("mkdir many && cd many && for i in $(seq 1 1200); do : > f$i; done", dir);
    const report = scanWorkspace(dir, { since: Date.now(), neutralise: true, maxEntries: 1000 });
    strictEqual(report.complete, false);
    ok(/more than 1000 entries/.test(report.problems.join()), report.problems.join());
    sh("p=deep; for i in $(seq 1 205); do p=$p/d; done; mkdir -p $p", dir);
    const deep = scanWorkspace(join(dir, "deep"), { neutralise: true, maxEntries: 1e6 });
    ok(/deeper than 200 levels/.test(deep.problems.join()), deep.problems.join());
  }));

Deno.test("scan: a directory the gateway cannot read makes the scan incomplete (not as root)", () =>
  withDir((dir) => {
    const since = Date.now();
    sh("git init -q r && git -C r config core.fsmonitor x && chmod 000 r/.git", dir);
    const report = scanWorkspace(dir, { since, neutralise: true });
    if (ROOT) {
      strictEqual(report.complete, true, "root reads it, and neutralises");
      strictEqual(report.neutralised.length, 1);
    } else {
      strictEqual(report.complete, false);
      ok(
        /cannot (read|open) .*r\/\.git: EACCES/.test(report.problems.join()),
        report.problems.join(),
      );
    }
  }));

Deno.test("DirHandle: a directory swapped for a symlink is never followed", () =>
  withDir((dir) => {
    Deno.mkdirSync(join(dir, "real/sub"), { recursive: true });
    Deno.symlinkSync(join(dir, "real"), join(dir, "link"));
    const root = DirHandle.open(dir);
    try {
      strictEqual(root.openDir("link"), null);
      strictEqual(root.openPath("link/sub"), null);
      strictEqual(root.readFile("link", 10), null);
      const sub = root.openPath("real/sub");
      ok(sub);
      sub.close();
    } finally {
      root.close();
    }
  }));

Deno.test("scan: a hook hard-linked to another file is set aside without touching that file", () =>
  withDir((dir) => {
    sh("mkdir tools && printf '#!/bin/sh\\n' > tools/build.sh && chmod 755 tools/build.sh", dir);
    const since = Date.now();
    sh("git init -q r && ln tools/build.sh r/.git/hooks/pre-commit", dir);
    const report = scanWorkspace(dir, { since, neutralise: true });
    deepStrictEqual(rel(dir, report.neutralised.map((n) => n.path)), ["r/.git/hooks/pre-commit"]);
    strictEqual(Deno.statSync(join(dir, "tools/build.sh")).mode! & 0o777, 0o755);
    ok(!existsSync(join(dir, "r/.git/hooks/pre-commit")));
  }));

Deno.test("scan: entries of a hooks directory count toward the limit", () =>
  withDir((dir) => {
    sh("git init -q r && cd r/.git/hooks && for i in $(seq 1 1100); do : > h$i; done", dir);
    const report = scanWorkspace(dir, { since: Date.now(), neutralise: true, maxEntries: 1000 });
    strictEqual(report.complete, false);
    deepStrictEqual(report.problems, [
      "the workspace has more than 1000 entries (sandbox.workspace_scan_limit)",
    ]);
  }));
