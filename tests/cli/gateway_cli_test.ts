/** `coop start` and `coop chat` refuse bad setups with a clear message, never a stack trace. */
import { runCommand, type RunResult } from "../fixtures/run_command.ts";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

function coop(args: string[], stdin = ""): Promise<RunResult> {
  return runCommand(Deno.execPath(), ["run", "--allow-all", "--quiet", main, ...args], { stdin });
}

async function withConfig(text: string, fn: (file: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "coop-cli-" });
  try {
    const file = join(dir, "coop.toml");
    await Deno.writeTextFile(file, text.replaceAll("{{dir}}", dir));
    await fn(file);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const BASE = `
[agent]
workspace = "{{dir}}/ws"
state_dir = "{{dir}}/state"
[sandbox]
enabled = false
`;

Deno.test("coop start: a missing config file is reported by name, exit 1, no stack", async () => {
  const r = await coop(["start", "--config", "/nonexistent/coop.toml"]);
  assertEquals(r.code, 1);
  assertMatch(r.stderr, /\/nonexistent\/coop\.toml.*cannot read config: file not found/);
  assertNotIncludes(r.stderr, "    at ");
});

Deno.test("coop start: a config error names the file and key; nothing starts", async () => {
  await withConfig(BASE + '[channels.http]\nenabled = true\nlisten = "nowhere"\n', async (file) => {
    const r = await coop(["start", "--config", file]);
    assertEquals(r.code, 1);
    assertMatch(r.stderr, /coop\.toml: channels\.http\.listen: must be "host:port"/);
    assertMatch(r.stderr, /nothing was started/);
    assertNotIncludes(r.stderr, "    at ");
  });
});

Deno.test("coop start: with no HTTP channel and no cron jobs there is nothing to run", async () => {
  await withConfig(BASE, async (file) => {
    const r = await coop(["start", "--config", file]);
    assertEquals(r.code, 1);
    assertMatch(
      r.stderr,
      /nothing to run in .*enable \[channels\.http\], \[channels\.telegram\] or \[channels\.signal\], or add \[\[cron\]\]/,
    );
  });
});

Deno.test("coop chat: an unknown option is a usage error (exit 2)", async () => {
  const r = await coop(["chat", "--bogus"]);
  assertEquals(r.code, 2);
  assertMatch(r.stderr, /coop chat/);
});

Deno.test("coop chat: without a model the turn fails with the fix, and the REPL goes on", async () => {
  await withConfig(BASE, async (file) => {
    const r = await coop(["chat", "--config", file], "hello\n/status\n/quit\n");
    assertEquals(r.code, 0, r.stderr);
    assertMatch(r.stdout, /⚠ Sandbox: disabled/);
    assertMatch(r.stdout, /\(error: .*set \[agent\] model = "<provider name>\/<model id>"\)/);
    // With the sandbox off, an unmatched terminal is public (the router never guesses an owner).
    assertMatch(r.stdout, /user public · trust public · terminal:default/);
  });
});
