/**
 * `exec`, `working_dir`, the workspace tool directories on `PATH` and `send_file`, through the
 * executor and the real sandbox (run as root and unprivileged).
 */
import { match, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../src/tools/tool_executor.ts";
import { sandboxTest } from "../sandbox/harness.ts";

const TEXT = '[agent]\nworkspace = "ws"\nstate_dir = "state"\n' +
  '[[users]]\nname = "bob"\ntrust = "inner"\n[[users]]\nname = "alice"\ntrust = "inner"\n';

function call(name: string, tool: string, args: unknown): ToolCall {
  return {
    principal: { name, trust: "inner" },
    situation: { channel: "http", ceiling: null, contributors: [] },
    tool,
    args,
  };
}

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** A config in a fresh directory; `executor()` is a new gateway's executor (a new session). */
async function withHome(
  fn: (home: { base: string; executor: () => ToolExecutor }) => Promise<void>,
): Promise<void> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-ptools-real-" }));
  // The sandbox may map to an unprivileged uid; let it traverse to the workspace.
  await Deno.chmod(base, 0o755);
  const file = join(base, "coop.toml");
  await Deno.writeTextFile(file, TEXT);
  try {
    await fn({ base, executor: () => new ToolExecutor(parseConfig(TEXT, file, base)) });
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

sandboxTest(
  "real sandbox: exec runs argv without a shell; LD_PRELOAD is refused and nothing runs",
  async () => {
    await withHome(async ({ base, executor }) => {
      const ex = executor();
      const literal = await ex.call(call("bob", "exec", { argv: ["echo", "$HOME;", "`id`"] }));
      strictEqual(literal.isError, false, literal.content);
      strictEqual(literal.decision?.placement, "sandbox");
      strictEqual(literal.content, "$HOME; `id`\n[exit code 0]", "nothing was expanded");

      const env = await ex.call(
        call("bob", "exec", { argv: ["printenv", "MY_SETTING"], env: { MY_SETTING: "v1" } }),
      );
      strictEqual(env.content, "v1\n[exit code 0]");

      for (const name of ["LD_PRELOAD", "LD_LIBRARY_PATH", "BASH_ENV", "NODE_OPTIONS"]) {
        const r = await ex.call(
          call("bob", "exec", { argv: ["touch", "/work/ran"], env: { [name]: "/work/x" } }),
        );
        strictEqual(r.isError, true, name);
        match(r.content, new RegExp(`env "${name}" is refused`));
        strictEqual(r.exitCode, undefined, "no command ran");
      }
      strictEqual(await exists(join(base, "ws", "bob", "ran")), false, "nothing ran");
    });
  },
);

sandboxTest(
  "real sandbox: working_dir inside runs there; ../alice is refused before running",
  async () => {
    await withHome(async ({ base, executor }) => {
      const ex = executor();
      const mk = await ex.call(
        call("bob", "bash", { command: "mkdir -p /work/a/b && ln -s / /work/root" }),
      );
      strictEqual(mk.isError, false, mk.content);
      await Deno.mkdir(join(base, "ws", "alice"), { recursive: true });

      const bash = await ex.call(call("bob", "bash", { command: "pwd", working_dir: "a/b" }));
      strictEqual(bash.content, "/work/a/b\n[exit code 0]");
      const exec = await ex.call(call("bob", "exec", { argv: ["pwd"], working_dir: "/work/a" }));
      strictEqual(exec.content, "/work/a\n[exit code 0]");

      for (const tool of ["bash", "exec"]) {
        for (const workingDir of ["../alice", "root", "a/../../alice"]) {
          const args = tool === "bash"
            ? { command: "touch ran", working_dir: workingDir }
            : { argv: ["touch", "ran"], working_dir: workingDir };
          const r = await ex.call(call("bob", tool, args));
          strictEqual(r.isError, true, `${tool} ${workingDir}`);
          match(r.content, /is outside your workspace \(\/work\)/, `${tool} ${workingDir}`);
          strictEqual(r.exitCode, undefined, "refused before running");
        }
      }
      strictEqual(await exists(join(base, "ws", "alice", "ran")), false);
      strictEqual(await exists(join(base, "ws", "ran")), false);
      strictEqual(await exists(join(base, "ws", "bob", "ran")), false);
    });
  },
);

sandboxTest(
  "real sandbox: a program put in /work/bin runs by name in a later session",
  async () => {
    await withHome(async ({ executor }) => {
      const first = executor();
      const path = await first.call(call("bob", "exec", { argv: ["printenv", "PATH"] }));
      match(path.content, /^\/work\/tools:\/work\/bin:\/work\/\.local\/bin:\/usr\/local\/bin:/);
      const install = await first.call(call("bob", "bash", {
        command: "mkdir -p /work/bin /work/tools /work/.local/bin && " +
          "printf '#!/bin/sh\\necho hello from bin \"$@\"\\n' > /work/bin/mytool && " +
          "printf '#!/bin/sh\\necho hello from tools\\n' > /work/tools/other && " +
          "printf '#!/bin/sh\\necho hello from local\\n' > /work/.local/bin/third && " +
          "chmod +x /work/bin/mytool /work/tools/other /work/.local/bin/third",
      }));
      strictEqual(install.isError, false, install.content);

      // A new executor is a new gateway: nothing but the workspace carries over.
      const later = executor();
      const viaExec = await later.call(call("bob", "exec", { argv: ["mytool", "x"] }));
      strictEqual(viaExec.content, "hello from bin x\n[exit code 0]");
      const viaBash = await later.call(call("bob", "bash", { command: "mytool; other; third" }));
      strictEqual(
        viaBash.content,
        "hello from bin\nhello from tools\nhello from local\n[exit code 0]",
      );
      // Another user's sandbox does not see bob's tools.
      const alice = await later.call(call("alice", "exec", { argv: ["mytool"] }));
      ok(alice.isError);
      match(alice.content, /mytool: command not found/);
    });
  },
);

sandboxTest(
  "real sandbox: send_file refuses ../../etc/passwd and symlinks to it; sends a workspace file",
  async () => {
    await withHome(async ({ executor }) => {
      const ex = executor();
      const setup = await ex.call(call("bob", "bash", {
        command: "echo 'a,b' > report.csv && ln -s /etc/passwd pw && " +
          "ln -s ../../../../../../../../etc/passwd pw-rel && mkdir d && ln -s /etc d/etc",
      }));
      strictEqual(setup.isError, false, setup.content);
      for (const path of ["../../etc/passwd", "/etc/passwd", "pw", "pw-rel", "d/etc/passwd"]) {
        const r = await ex.call(call("bob", "send_file", { path }));
        strictEqual(r.isError, true, path);
        strictEqual(r.file, undefined, path);
        ok(!r.content.includes("root:"), path);
      }
      const sent = await ex.call(call("bob", "send_file", { path: "/work/report.csv" }));
      strictEqual(sent.isError, false, sent.content);
      strictEqual(new TextDecoder().decode(sent.file?.bytes), "a,b\n");
    });
  },
);
