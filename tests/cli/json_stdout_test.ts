/**
 * `--json` output can be piped: with every log level on (`COOP_LOG=debug`) stdout holds exactly
 * one JSON document and the log lines are on stderr.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assertEquals, assertMatch } from "../assert.ts";
import { sandboxTest } from "../sandbox/harness.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

async function coopDebug(
  args: string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", MAIN, ...args],
    env: { COOP_LOG: "debug", NO_COLOR: "1" },
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

sandboxTest("coop sandbox exec --json: stdout is pure JSON at COOP_LOG=debug", async () => {
  const r = await coopDebug(["sandbox", "exec", "--json", "--", "sh", "-c", "echo hi"]);
  assertEquals(r.code, 0, r.stderr);
  assertEquals(JSON.parse(r.stdout).stdout, "hi\n");
  assertMatch(r.stderr, /DBG.*sandbox\.exec/, "the debug log went to stderr");
});

sandboxTest("coop check --json: stdout is pure JSON at COOP_LOG=debug", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-json-" });
  try {
    const config = join(dir, "coop.toml");
    await Deno.writeTextFile(
      config,
      `[agent]\nworkspace = "${dir}/ws"\nstate_dir = "${dir}/state"\n`,
    );
    const r = await coopDebug(["check", "--json", "--config", config]);
    assertEquals(JSON.parse(r.stdout).config, config, r.stderr);
    assertMatch(r.stderr, /DBG.*sandbox\.exec/, "the probe's debug log went to stderr");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
