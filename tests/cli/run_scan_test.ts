/**
 * `coop run --user bob` runs bob's program on his workspace, in his real sandbox (root and
 * unprivileged): a git hook it plants is disabled when coop run exits, the owner is told on
 * stderr, and the owner's real git on the host then does not run it — put back as bob left it,
 * the same git does (ATTACKS F27, audit finding 11).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { hostProcessesWith, sandboxTest } from "../sandbox/harness.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

const CONFIG = `
[agent]
workspace = "ws"
state_dir = "state"
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
`;

const PLANT = "git init -q r && printf '#!/bin/sh\\ntouch pwned\\n' > r/.git/hooks/pre-commit && " +
  "chmod +x r/.git/hooks/pre-commit";

/** The owner's `git commit` on the host in bob's repository; returns whether the hook ran. */
async function ownerCommitRunsHook(repo: string): Promise<boolean> {
  const out = await new Deno.Command("git", {
    args: [
      ...["-c", "safe.directory=*", "-c", "user.name=o", "-c", "user.email=o@example.org"],
      ...["-C", repo, "commit", "-q", "--allow-empty", "-m", "owner"],
    ],
    env: { PATH: "/usr/bin:/bin", HOME: repo },
    clearEnv: true,
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const ran = existsSync(join(repo, "pwned"));
  await Deno.remove(join(repo, "pwned")).catch(() => {});
  return ran;
}

sandboxTest("coop run: a git hook the program plants is disabled when coop run exits", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-run-scan-" });
  try {
    await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        "--quiet",
        MAIN,
        "run",
        "--user",
        "bob",
        "--",
        "sh",
        "-c",
        PLANT,
      ],
      cwd: dir,
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 0, stderr);
    const repo = join(dir, "ws", "bob", "r");
    const hook = join(repo, ".git", "hooks", "pre-commit");
    assert(!existsSync(hook), "the hook bob's program planted is still active");
    assert(existsSync(`${hook}.coop-disabled`), "the original is kept beside it");
    assertMatch(stderr, /coop: Disabled git settings .*\/work\/r\/\.git\/hooks\/pre-commit/);
    assertEquals(await ownerCommitRunsHook(repo), false, "the owner's git ran bob's hook");
    // Control: the trap was real — put back as bob left it (Coop also took its x bit), the same
    // git runs it.
    await Deno.rename(`${hook}.coop-disabled`, hook);
    await Deno.chmod(hook, 0o755);
    assertEquals(await ownerCommitRunsHook(repo), true, "control: the hook as bob left it runs");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

sandboxTest(
  "coop run, piped and ended by Ctrl-C: the sandbox goes, and the scan still runs",
  async () => {
    const dir = await Deno.makeTempDir({ prefix: "coop-run-scan-" });
    const marker = `sleep ${4000 + Math.floor(Math.random() * 1000)}`;
    try {
      await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "--quiet", MAIN, "run", "--user", "bob", "--", "sh", "-c"]
          .concat(`${PLANT} && echo planted && ${marker}`),
        cwd: dir,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const stderr = new Response(child.stderr).text();
      // Once the hook is planted and the program waits, the owner presses Ctrl-C (SIGINT).
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      for (let seen = ""; !seen.includes("planted");) {
        const { value, done } = await reader.read();
        if (done) throw new Error(`coop run ended before planting: ${await stderr}`);
        seen += value;
      }
      reader.cancel().catch(() => {});
      child.kill("SIGINT");
      const status = await child.status;
      // coop caught it: it ended the sandbox, scanned, and exited 128 + 2 by itself.
      assertEquals([status.signal, status.code], [null, 130], await stderr);
      assertMatch(await stderr, /coop: SIGINT: the sandbox was killed/);
      assertEquals(hostProcessesWith(marker), [], "the sandboxed program outlived coop run");
      const hook = join(dir, "ws", "bob", "r", ".git", "hooks", "pre-commit");
      assert(!existsSync(hook), "Ctrl-C skipped the scan: the planted hook is still active");
      assert(existsSync(`${hook}.coop-disabled`), "the original is kept beside it");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
);
