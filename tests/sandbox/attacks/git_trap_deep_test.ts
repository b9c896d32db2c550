/**
 * ATTACKS F27 against the scan's shortcuts: a trap planted deep in the workspace by changing
 * files in place — appending `core.fsmonitor` to an existing repository's `.git/config`, making
 * an existing hook executable — changes no directory's mtime on the way down. The scan after the
 * call must still find both: with a small workspace (scanned on the event loop) and with one too
 * big for that (the loop's pass hands over to a worker). Then the owner runs git there (`status`,
 * `commit`): nothing runs; put back as bob left it, the same commands run the canaries (the traps
 * were real).
 */
import { deepStrictEqual, ok } from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../../src/tools/tool_executor.ts";
import { usersToml } from "../../fixtures/users_toml.ts";
import { SANDBOX_TESTS } from "../harness.ts";

const REPO = "a/b/c";
const DIRS = ["", "a", "a/b", REPO, `${REPO}/.git`, `${REPO}/.git/hooks`];

const call = (command: string): ToolCall => ({
  principal: { name: "bob", trust: "inner" },
  situation: { channel: "http", ceiling: null, contributors: [] },
  tool: "bash",
  args: { command },
});

/** The owner's git on the host: `status`, then an empty commit (which runs `post-commit`). */
function ownerGit(dir: string, home: string): void {
  for (
    const args of [["status"], [
      "-c",
      "user.name=o",
      "-c",
      "user.email=o@x",
      "commit",
      "--allow-empty",
      "-qm",
      "x",
    ]]
  ) {
    new Deno.Command("git", {
      args,
      cwd: dir,
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin", HOME: home, GIT_CONFIG_NOSYSTEM: "1" },
      stdin: "null",
    }).outputSync();
  }
}

for (const [variant, padding] of [["a small workspace", 0], ["a large workspace", 60]] as const) {
  Deno.test({
    name: `§4.1 F27: a trap planted in place deep in ${variant}, no directory mtime changed`,
    ignore: !SANDBOX_TESTS,
    sanitizeResources: false,
    sanitizeOps: false,
    async fn() {
      const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-f27-deep-" }));
      await Deno.chmod(base, 0o755);
      try {
        const text = usersToml([["alice", "owner"], ["bob", "inner"]]);
        const config = parseConfig(text, join(base, "coop.toml"), base);
        const executor = new ToolExecutor(config);
        const ws = join(base, "ws", "bob");
        const canary = join(base, "canary");
        await Deno.mkdir(canary, { mode: 0o777 });
        await Deno.mkdir(join(base, "home"));
        // Call 1: an ordinary repository with a hook that is not executable (git ignores it).
        const pad = padding
          ? `mkdir -p ${Array.from({ length: padding }, (_, i) => `pad/d${i}`).join(" ")} && `
          : "";
        const setUp = await executor.call(call(
          `${pad}mkdir -p ${REPO} && cd ${REPO} && git init -q && ` +
            `printf '#!/bin/sh\\ntouch ${canary}/hook\\n' > .git/hooks/post-commit && echo ready`,
        ));
        ok(setUp.content.includes("ready"), setUp.content);
        deepStrictEqual(setUp.gitNeutralised, undefined, "nothing to disable yet");
        await new Promise((r) => setTimeout(r, 1100)); // a later second of ctime for call 2

        // Call 2: the trap, by changing two existing files in place; the directories' mtimes
        // are compared inside the sandbox, before the scan after the call changes anything.
        const stamps = `stat -c %y ${DIRS.map((d) => `/work/${d}`).join(" ")}`;
        const planted = await executor.call(call(
          `before=$(${stamps}) && cd ${REPO} && ` +
            `printf '[core]\\n\\tfsmonitor = touch ${canary}/fsmonitor\\n' >> .git/config && ` +
            `chmod +x .git/hooks/post-commit && after=$(${stamps}) && ` +
            `[ "$before" = "$after" ] && echo planted, no directory mtime changed`,
        ));
        ok(planted.content.includes("planted, no directory mtime changed"), planted.content);
        const told = (planted.gitNeutralised ?? []).map((
          n,
        ) => [n.path.slice(ws.length + 1), n.kind]);
        deepStrictEqual(told.sort(), [
          [`${REPO}/.git/config`, "config"],
          [`${REPO}/.git/hooks/post-commit`, "hook"],
        ]);
        ownerGit(join(ws, REPO), join(base, "home"));
        deepStrictEqual([...Deno.readDirSync(canary)], [], "nothing ran as the owner");

        // Control: put back as bob left it, git runs both.
        for (const n of planted.gitNeutralised!) {
          if (existsSync(n.path)) Deno.removeSync(n.path);
          Deno.renameSync(n.keptAs, n.path);
          if (n.kind === "hook") Deno.chmodSync(n.path, 0o755);
        }
        ownerGit(join(ws, REPO), join(base, "home"));
        const fired = [...Deno.readDirSync(canary)].map((e) => e.name).sort();
        deepStrictEqual(fired, ["fsmonitor", "hook"], "the traps were real");
      } finally {
        await Deno.remove(base, { recursive: true });
      }
    },
  });
}
