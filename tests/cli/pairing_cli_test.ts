/**
 * `coop pairing` as its own process beside a gateway that holds the state directory's lock and
 * its database open (as `coop start` does): it lists the request, approves it, and the gateway
 * answers the sender's next message as the paired person. `coop check` then shows them beside
 * the configured users. Usage mistakes exit 2.
 */
import { join } from "node:path";
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import { coopArgv } from "../e2e/gateway_process.ts";
import { runCommand } from "../fixtures/run_command.ts";
import { availableProbe } from "../fixtures/check_run.ts";
import { runCheck } from "../../src/cli/check_command.ts";
import { PairingRequiredError } from "../../src/gateway/pairing_gate.ts";
import { lockStateDir } from "../../src/state/state_lock.ts";
import { withPeopleGateway } from "../gateway/fixtures/people_gateway.ts";

function coop(...args: string[]) {
  const [cmd, ...rest] = coopArgv(...args);
  return runCommand(cmd, rest, { env: { NO_COLOR: "1" } });
}

Deno.test("coop pairing: list and approve as another process while the gateway runs; coop check shows them", async () => {
  await withPeopleGateway([format.text(["Hi Grace."])], async ({ gateway, server, dir }) => {
    const lock = lockStateDir(join(dir, "state"));
    try {
      const refused = await assertRejects(
        () =>
          gateway.handle({
            channel: "telegram",
            sender: "4242",
            text: "hello",
            senderName: "Grace\u001b[31m H.",
          }),
        PairingRequiredError,
      );
      const code = /[A-Z2-9]{4}-[A-Z2-9]{4}/.exec(refused.reply)![0];
      const config = join(dir, "coop.toml");
      const list = await coop("pairing", "list", "--config", config);
      assertEquals(list.code, 0, list.stderr);
      assertMatch(
        list.stdout,
        /Pairing requests \(1\):\n {2}telegram:4242 "Grace\\u001b\[31m H\." — waiting/,
      );
      assert(!list.stdout.includes("\u001b"), "a display name cannot drive the terminal");
      assert(!list.stdout.includes(code), "the list never shows a code (only its hash is kept)");
      const approve = await coop("pairing", "approve", code, "--name", "grace", "--config", config);
      assertEquals(approve.code, 0, approve.stderr);
      assertMatch(approve.stdout, /approved telegram:4242 as grace \(trust familiar\)/);
      const outcome = await gateway.handle({ channel: "telegram", sender: "4242", text: "hi" });
      assertEquals(outcome.reply, "Hi Grace.");
      assertMatch(String(server.requests[0].body.system), /talking with grace \(trust: familiar\)/);

      let output = "";
      await runCheck(["--config", config, "--json"], {
        probe: availableProbe,
        write: (t) => output += t,
        env: () => undefined,
      });
      const report = JSON.parse(output);
      assertEquals(report.people.paired.map((p: { name: string }) => p.name), ["grace"]);
      assertEquals(report.people.paired[0].match, ["telegram:4242"]);
      assertEquals(report.people.users.map((u: { name: string }) => u.name), [
        "alice",
        "carol",
        "bob",
      ]);
    } finally {
      lock.release();
    }
  });
});

Deno.test("coop pairing: usage mistakes exit 2 with the usage; an unknown code exits 1", async () => {
  const none = await coop("pairing");
  assertEquals(none.code, 2);
  assertMatch(none.stderr, /coop pairing needs list, approve CODE, deny CODE or remove NAME/);
  const noCode = await coop("pairing", "approve");
  assertEquals(noCode.code, 2);
  assertMatch(noCode.stderr, /coop pairing approve needs one CODE/);
  const dir = await Deno.makeTempDir({ prefix: "coop-pairing-" });
  try {
    const config = join(dir, "coop.toml");
    await Deno.writeTextFile(config, `[agent]\nstate_dir = "${dir}/state"\n`);
    const unknown = await coop("pairing", "deny", "ABCD-EFGH", "--config", config);
    assertEquals(unknown.code, 1);
    assertMatch(unknown.stderr, /no pending pairing request has the code ABCD-EFGH/);
    const bad = await coop("pairing", "approve", "ABC", "--config", config);
    assertMatch(bad.stderr, /"ABC" is not a pairing code/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
