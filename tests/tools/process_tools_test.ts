/**
 * `exec`, `working_dir` and `send_file` with fake runners: what is refused never reaches the
 * sandbox or the host, and what is allowed reaches them exactly as asked.
 */
import { deepStrictEqual, match, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { commandResult } from "../fixtures/command_result.ts";
import { parseConfig } from "../../src/config/config.ts";
import { type ToolCall, ToolExecutor } from "../../src/tools/tool_executor.ts";
import type { HostRunOptions } from "../../src/tools/host_runner.ts";
import type { ExecOptions, SandboxPolicyInput } from "../../src/sandbox/mod.ts";
import {
  DANGEROUS_ENV_NAMES,
  DANGEROUS_ENV_PREFIXES,
  dangerousEnvProblem,
} from "../../src/tools/dangerous_env.ts";
import type { TrustLevel } from "../../src/trust/trust_level.ts";

const CONFIG = `
[agent]
workspace = "ws"
state_dir = "state"
max_send_file_size = "1K"
[[users]]
name = "alice"
trust = "owner"
[[users]]
name = "bob"
trust = "inner"
[[users]]
name = "fay"
trust = "familiar"
`;

interface Recorder {
  sandbox: Array<{ policy: SandboxPolicyInput; argv: string[]; options: ExecOptions }>;
  host: Array<{ argv: readonly string[]; options: HostRunOptions }>;
}

async function setup(fn: (executor: ToolExecutor, rec: Recorder, dir: string) => Promise<void>) {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-ptools-" }));
  const rec: Recorder = { sandbox: [], host: [] };
  const config = parseConfig(CONFIG, join(dir, "coop.toml"), dir);
  const executor = new ToolExecutor(config, {
    env: { PATH: "/usr/bin" },
    sandbox: (policy, argv, options) => {
      rec.sandbox.push({ policy, argv, options });
      return Promise.resolve(commandResult({ stdout: "ran\n" }));
    },
    host: (command, options) => {
      rec.host.push({ argv: ["sh", "-c", command], options });
      return Promise.resolve(commandResult({ stdout: "ran\n" }));
    },
    hostArgv: (argv, options) => {
      rec.host.push({ argv, options });
      return Promise.resolve(commandResult({ stdout: "ran\n" }));
    },
  });
  await Deno.mkdir(join(dir, "ws", "bob", "sub"), { recursive: true });
  await Deno.mkdir(join(dir, "ws", "alice"), { recursive: true });
  try {
    await fn(executor, rec, dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function call(name: string, trust: TrustLevel, tool: string, args: unknown): ToolCall {
  return {
    principal: { name, trust },
    situation: { channel: "http", ceiling: null, contributors: [] },
    tool,
    args,
  };
}

Deno.test("dangerous env: every listed name and prefix is refused, in any case; ordinary names pass", () => {
  const names = Object.keys(DANGEROUS_ENV_NAMES);
  for (const required of ["LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "BASH_ENV", "ENV"]) {
    ok(dangerousEnvProblem(required) !== null, required);
  }
  for (const required of ["PYTHONSTARTUP", "NODE_OPTIONS", "PERL5OPT", "GLIBC_TUNABLES"]) {
    ok(names.includes(required), `${required} is listed by name`);
  }
  for (const name of names) {
    ok(dangerousEnvProblem(name) !== null, name);
    ok(dangerousEnvProblem(name.toLowerCase()) !== null, name.toLowerCase());
  }
  for (const [prefix] of DANGEROUS_ENV_PREFIXES) {
    ok(dangerousEnvProblem(`${prefix}ANYTHING`) !== null, prefix);
  }
  ok(dangerousEnvProblem("BASH_FUNC_ls%%") !== null, "not even a valid name");
  ok(dangerousEnvProblem("A=B") !== null, "= in a name");
  for (const safe of ["LANG", "TZ", "MY_SETTING", "PATH", "HOME", "CC", "RUST_LOG"]) {
    strictEqual(dangerousEnvProblem(safe), null, safe);
  }
});

Deno.test("exec: a dangerous env name is refused with a clear error and nothing runs", async () => {
  await setup(async (executor, rec) => {
    for (const [name, trust] of [["bob", "inner"], ["alice", "owner"]] as const) {
      const r = await executor.call(
        call(name, trust, "exec", { argv: ["id"], env: { LD_PRELOAD: "/work/evil.so" } }),
      );
      strictEqual(r.isError, true);
      match(r.content, /env "LD_PRELOAD" is refused: the dynamic linker/);
    }
    deepStrictEqual(rec.sandbox, []);
    deepStrictEqual(rec.host, []);
  });
});

Deno.test("exec: argv reaches the sandbox as given (no shell), with env and working_dir", async () => {
  await setup(async (executor, rec) => {
    const r = await executor.call(
      call("bob", "inner", "exec", {
        argv: ["echo", "$HOME; id"],
        env: { MY_SETTING: "1" },
        working_dir: "sub",
      }),
    );
    strictEqual(r.isError, false, r.content);
    strictEqual(r.decision?.placement, "sandbox");
    deepStrictEqual(rec.sandbox[0].argv, ["echo", "$HOME; id"]);
    deepStrictEqual(rec.sandbox[0].options.env, { MY_SETTING: "1" });
    strictEqual(rec.sandbox[0].options.cwd, "/work/sub");
  });
});

Deno.test("exec: the owner's program runs on the host in its working_dir, env over the host's", async () => {
  await setup(async (executor, rec, dir) => {
    const r = await executor.call(
      call("alice", "owner", "exec", { argv: ["ls", "-l"], env: { X: "1" }, working_dir: "bob" }),
    );
    strictEqual(r.isError, false, r.content);
    deepStrictEqual(rec.host[0].argv, ["ls", "-l"]);
    strictEqual(rec.host[0].options.cwd, join(dir, "ws", "bob"));
    deepStrictEqual(rec.host[0].options.env, { PATH: "/usr/bin", X: "1" });
  });
});

Deno.test("exec: trust as bash — familiar and public are refused, nothing runs", async () => {
  await setup(async (executor, rec) => {
    for (const [name, trust] of [["fay", "familiar"], ["zed", "public"]] as const) {
      const r = await executor.call(call(name, trust, "exec", { argv: ["id"] }));
      strictEqual(r.isError, true);
      match(r.content, /exec is not permitted .*tool\.exec\.needs_inner/);
    }
    strictEqual(rec.sandbox.length + rec.host.length, 0);
  });
});

Deno.test("working_dir outside the workspace is refused before anything runs (bash and exec)", async () => {
  await setup(async (executor, rec, dir) => {
    await Deno.symlink(join(dir, "ws", "alice"), join(dir, "ws", "bob", "out"));
    await Deno.writeTextFile(join(dir, "ws", "bob", "file.txt"), "x");
    const cases: Array<[string, RegExp]> = [
      ["../alice", /working_dir "\.\.\/alice" is outside your workspace \(\/work\): "\.\." leaves/],
      ["sub/../../alice", /is outside your workspace/],
      ["/work/../alice", /is outside your workspace/],
      ["/etc", /"\/etc" is outside your workspace \(\/work\)/],
      [join(dir, "ws", "alice"), /is outside your workspace/],
      ["out", /"out" is outside your workspace \(\/work\): a symbolic link leads out/],
      ["missing", /working_dir "missing" does not exist/],
      ["file.txt", /working_dir "file.txt" is not a directory/],
    ];
    for (const [workingDir, expected] of cases) {
      for (const tool of ["bash", "exec"]) {
        const args = tool === "bash"
          ? { command: "touch ran", working_dir: workingDir }
          : { argv: ["touch", "ran"], working_dir: workingDir };
        const r = await executor.call(call("bob", "inner", tool, args));
        strictEqual(r.isError, true, `${tool} ${workingDir}`);
        match(r.content, expected, `${tool} ${workingDir}`);
      }
    }
    strictEqual(rec.sandbox.length, 0, "nothing reached the sandbox");
    const inside = await executor.call(
      call("bob", "inner", "bash", { command: "pwd", working_dir: "/work/sub" }),
    );
    strictEqual(inside.isError, false, inside.content);
    strictEqual(rec.sandbox[0].options.cwd, "/work/sub");
    deepStrictEqual(rec.sandbox[0].argv, ["/bin/sh", "-c", "pwd"]);
  });
});

Deno.test("send_file: a workspace file comes back as a file; paths out, symlinks out and big files are refused", async () => {
  await setup(async (executor, _rec, dir) => {
    const bob = join(dir, "ws", "bob");
    await Deno.writeTextFile(join(bob, "report.csv"), "a,b\n1,2\n");
    await Deno.writeTextFile(join(dir, "ws", "alice", "secret.txt"), "alice's");
    await Deno.symlink("/etc/passwd", join(bob, "pw"));
    await Deno.symlink("../../../../../../etc/passwd", join(bob, "pw-rel"));
    await Deno.symlink(join(dir, "ws", "alice", "secret.txt"), join(bob, "alice"));
    await Deno.writeTextFile(join(bob, "big.bin"), "x".repeat(2048));

    const ok1 = await executor.call(call("fay", "familiar", "send_file", { path: "missing" }));
    match(ok1.content, /no such file/);
    const sent = await executor.call(call("bob", "inner", "send_file", { path: "report.csv" }));
    strictEqual(sent.isError, false, sent.content);
    strictEqual(sent.file?.name, "report.csv");
    strictEqual(sent.file?.mediaType, "text/csv");
    strictEqual(new TextDecoder().decode(sent.file?.bytes), "a,b\n1,2\n");
    match(sent.content, /"report.csv" \(8 bytes, text\/csv\) will be sent/);

    const refused: Array<[string, RegExp]> = [
      ["../../etc/passwd", /must not contain "\.\."/],
      ["/etc/passwd", /outside your workspace/],
      ["../alice/secret.txt", /must not contain "\.\."/],
      ["pw", /outside your workspace/],
      ["pw-rel", /outside your workspace/],
      ["alice", /outside your workspace/],
      ["big.bin", /"big.bin" is 2048 bytes; send_file takes at most 1024/],
    ];
    for (const [path, expected] of refused) {
      const r = await executor.call(call("bob", "inner", "send_file", { path }));
      strictEqual(r.isError, true, path);
      strictEqual(r.file, undefined, path);
      match(r.content, expected, path);
    }
    const pub = await executor.call(call("zed", "public", "send_file", { path: "report.csv" }));
    match(pub.content, /send_file is not permitted .*tool\.send_file\.needs_familiar/);
  });
});
