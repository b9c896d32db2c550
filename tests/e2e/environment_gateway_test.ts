/**
 * Issue 14's acceptance, end to end through `coop init`, `coop start` and `coop sandbox
 * reset`: Bob, with an environment, installs a program under /usr; in a later session and
 * after a gateway restart it still runs for him; Carol, on the same environment, does not
 * have it; the host's /usr never changes; `coop sandbox reset --user bob` removes it.
 *
 * The stand-in for `apt-get install` is Bob writing a program into /usr/local/bin over a
 * `host` base (the host's /usr read-only below his upper); the Debian variant (a real
 * `apt-get install -y` through the policy proxy) is in `environment_apt_gateway_test.ts`.
 */
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { runCoop } from "./coop_command.ts";
import { makeCoopHome, postMessage, startGateway, stopGateway } from "./gateway_process.ts";

function config(baseUrl: string): string {
  return `
[agent]
model = "scripted/test-model"
workspace = "{{dir}}/workspace"
state_dir = "{{dir}}/state"

[sandbox]
environment = "Coopfile"

[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]

[[users]]
name = "bob"
trust = "full"
match = ["http:bob"]

[[users]]
name = "carol"
trust = "full"
match = ["http:carol"]

[[providers]]
name = "scripted"
kind = "${format.kind}"
base_url = "${format.baseUrl(baseUrl)}"

[channels.http]
enabled = true
listen = "127.0.0.1:0"
[[channels.http.tokens]]
id = "bob"
token_env = "BOB_TOKEN"
[[channels.http.tokens]]
id = "carol"
token_env = "CAROL_TOKEN"
`;
}

/** The names in the host's /usr/local/bin (compared before and after). */
function hostLocalBin(): string[] {
  try {
    return [...Deno.readDirSync("/usr/local/bin")].map((e) => e.name).sort();
  } catch {
    return [];
  }
}

/** The text of the last tool result the model was sent in request `body`. */
function lastToolResult(body: Record<string, unknown>): string {
  return JSON.stringify(format.messages(body).at(-1));
}

const TOKENS = { BOB_TOKEN: "bob-secret", CAROL_TOKEN: "carol-secret" };

sandboxTest(
  "e2e environment: bob's install survives sessions and restarts, for bob only",
  async () => {
    const marker = `coop-e2e-${crypto.randomUUID().slice(0, 8)}`;
    const install = `mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho ${marker} works\\n' > ` +
      `/usr/local/bin/${marker} && chmod 755 /usr/local/bin/${marker} && echo installed`;
    const run = `${marker}`;
    const script = [
      format.toolCall("c1", "bash", [JSON.stringify({ command: install })]),
      format.text(["installed it"]),
      format.toolCall("c2", "bash", [JSON.stringify({ command: run })]),
      format.text(["ran it"]),
      format.toolCall("c3", "bash", [JSON.stringify({ command: run })]),
      format.text(["carol tried"]),
      format.toolCall("c4", "bash", [JSON.stringify({ command: run })]),
      format.text(["after reset"]),
    ];
    const hostBefore = hostLocalBin();
    await withScriptedServer(script, async (server) => {
      const home = await makeCoopHome(config(server.url));
      await Deno.writeTextFile(join(home.dir, "Coopfile"), '[base]\nimage = "host"\n');
      try {
        // Before the base is built, coop check says what to do.
        const check = await runCoop(home, "check", "--config", home.config);
        assertMatch(check.stdout, /not built yet.*coop init --config/);
        const init = await runCoop(home, "init", "--config", home.config);
        assertEquals(init.code, 0, init.stderr + init.stdout);

        let firstSession = "";
        let gateway = await startGateway(home, TOKENS);
        try {
          const first = await postMessage(gateway.url, "bob-secret", { text: "install it" });
          assertEquals(first.status, 200, JSON.stringify(first.json));
          assertEquals(first.json.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
          assertMatch(lastToolResult(server.requests[1].body), /installed/);
          firstSession = String(first.json.session);
        } finally {
          await stopGateway(gateway);
        }
        assertEquals(hostLocalBin(), hostBefore, "the host's /usr/local/bin is unchanged");

        // A restart and a new session: bob's program is still his.
        gateway = await startGateway(home, TOKENS);
        try {
          const later = await postMessage(gateway.url, "bob-secret", { text: "run it" });
          assertEquals(later.status, 200, JSON.stringify(later.json));
          assert(later.json.session !== firstSession, "a new session");
          assertEquals(later.json.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
          assertMatch(lastToolResult(server.requests[3].body), new RegExp(`${marker} works`));

          const carol = await postMessage(gateway.url, "carol-secret", { text: "run it" });
          assertEquals(carol.status, 200, JSON.stringify(carol.json));
          assertEquals(carol.json.tools, [{ name: "bash", sandboxed: true, exitCode: 127 }]);
          assertMatch(lastToolResult(server.requests[5].body), /not found/);

          const status = await runCoop(
            home,
            "sandbox",
            "status",
            "--config",
            home.config,
            "--json",
          );
          const environments = JSON.parse(status.stdout).environments;
          assertEquals(environments.length, 1, status.stdout);
          assertEquals(environments[0].built, true);
          const users = environments[0].users.map((u: { user: string }) => u.user);
          assertEquals(users, ["bob", "carol"]);

          const reset = await runCoop(
            home,
            "sandbox",
            "reset",
            "--user",
            "bob",
            "--config",
            home.config,
          );
          assertEquals(reset.code, 0, reset.stderr);
          assertMatch(reset.stdout, /removed upper of bob in .*\nfreed (at least )?\d/);

          const after = await postMessage(gateway.url, "bob-secret", { text: "run it again" });
          assertEquals(after.json.tools, [{ name: "bash", sandboxed: true, exitCode: 127 }]);
        } finally {
          await stopGateway(gateway);
        }
        assertEquals(hostLocalBin(), hostBefore, "the host's /usr/local/bin is unchanged");
      } finally {
        // What the sandboxes wrote (an overlay's work/work is mode 000): removed the Coop way.
        for (const user of ["bob", "carol"]) {
          await runCoop(home, "sandbox", "reset", "--user", user, "--config", home.config);
        }
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  },
);
