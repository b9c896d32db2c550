// Secrets never enter a sandbox (ATTACKS.md E1), on every path: `coop check` refuses an
// `env_passthrough` that names a provider key or a channel token, but only the gateway runs it;
// `coop run` and `coop shell` loaded the config without it, and Bob's sandbox got the owner's
// API key. Every sandbox policy is now built through one function that refuses it
// (src/tools/sandbox_placement.ts), so the command never starts.
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { assert, assertEquals } from "../assert.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { runCommand } from "../fixtures/run_command.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
const PROVIDER_KEY = "sk-ant-api03-coop-test-secret-value-0123456789";
const HTTP_TOKEN = "coop-test-http-token-value-9876543210";

const CONFIG = (passthrough: string) => `
[agent]
workspace = "ws"
state_dir = "state"
model = "m"
[[providers]]
name = "anthropic"
kind = "anthropic"
api_key_env = "COOP_TEST_PROVIDER_KEY"
[channels.http]
tokens = [{ id = "bob", token_env = "COOP_TEST_HTTP_TOKEN" }]
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
[users.sandbox]
env_passthrough = ["LANG", "${passthrough}"]
`;

for (
  const [name, passthrough, key] of [
    ["a provider key", "COOP_TEST_PROVIDER_KEY", "providers[0].api_key_env"],
    ["a channel token", "COOP_TEST_HTTP_TOKEN", "channels.http.tokens[0].token_env"],
  ] as const
) {
  sandboxTest(`coop run: an env_passthrough naming ${name} refuses the command (E1)`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "coop-run-secret-" });
    try {
      await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG(passthrough));
      const run = await runCommand(Deno.execPath(), [
        "run",
        "--allow-all",
        "--quiet",
        MAIN,
        "run",
        "--config",
        join(dir, "coop.toml"),
        "--user",
        "bob",
        "--",
        "sh",
        "-c",
        `echo "seen=$${passthrough}"; touch ran`,
      ], {
        env: {
          COOP_TEST_PROVIDER_KEY: PROVIDER_KEY,
          COOP_TEST_HTTP_TOKEN: HTTP_TOKEN,
          NO_COLOR: "1",
        },
      });
      const output = run.stdout + run.stderr;
      assert(!output.includes(PROVIDER_KEY) && !output.includes(HTTP_TOKEN), output);
      assert(run.code !== 0, `the command ran: ${output}`);
      assert(output.includes(`${passthrough} (${key})`), output);
      assert(output.includes("secrets never enter a sandbox"), output);
      assertEquals(
        await Deno.stat(join(dir, "ws", "bob", "ran")).then(() => true, () => false),
        false,
        "nothing ran",
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}
