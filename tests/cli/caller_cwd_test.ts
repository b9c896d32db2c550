/**
 * `./coop` run from another directory: `--config` and `--workspace` both resolve against the
 * caller's directory (the wrapper no longer moves to the checkout), and errors name the
 * absolute path that was tried.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assertEquals, assertMatch } from "../assert.ts";
import { sandboxTest } from "../sandbox/harness.ts";

const COOP = fileURLToPath(new URL("../../coop", import.meta.url));

async function coopIn(cwd: string, args: string[]) {
  const out = await new Deno.Command(COOP, { args, cwd, stdin: "null", env: { NO_COLOR: "1" } })
    .output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

async function withCaller(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-caller-" }));
  await Deno.chmod(dir, 0o755);
  try {
    await Deno.mkdir(join(dir, "conf"));
    await Deno.writeTextFile(
      join(dir, "conf", "coop.toml"),
      '[agent]\nworkspace = "ws"\nstate_dir = "state"\n[sandbox]\nenabled = false\n',
    );
    await Deno.mkdir(join(dir, "ws"));
    await Deno.chmod(join(dir, "ws"), 0o777);
    await Deno.writeTextFile(join(dir, "ws", "marker.txt"), "the caller's workspace\n");
    await Deno.chmod(join(dir, "ws", "marker.txt"), 0o644);
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("./coop check --config: relative to the caller's directory; errors name the path", async () => {
  await withCaller(async (dir) => {
    const found = await coopIn(dir, ["check", "--config", "conf/coop.toml"]);
    assertEquals(found.code, 0, found.stderr + found.stdout);
    assertMatch(found.stdout, new RegExp(`^${dir}/conf/coop\\.toml: ok`, "m"));
    const missing = await coopIn(dir, ["check", "--config", "missing.toml"]);
    assertEquals(missing.code, 1);
    assertMatch(missing.stdout, new RegExp(`${dir}/missing\\.toml: \\(file\\): .*file not found`));
  });
});

sandboxTest("./coop sandbox exec --workspace: relative to the caller's directory too", async () => {
  await withCaller(async (dir) => {
    const r = await coopIn(dir, [
      "sandbox",
      "exec",
      "--workspace",
      "ws",
      "--",
      "cat",
      "marker.txt",
    ]);
    assertEquals([r.code, r.stdout], [0, "the caller's workspace\n"], r.stderr);
    const missing = await coopIn(dir, ["sandbox", "exec", "--workspace", "nope", "--", "true"]);
    assertEquals(missing.code, 125);
    assertMatch(missing.stderr, new RegExp(`does not exist \\(--workspace ${dir}/nope\\)`));
  });
});
