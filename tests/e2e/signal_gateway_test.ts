/**
 * `coop start` end to end over Signal: the fake signal-cli daemon on loopback, the scripted model
 * server, the real sandbox. Bob is configured by his uuid and writes from a device that reports
 * number and uuid; his bash runs sandboxed and the reply shows it; the daemon restarting mid-way
 * loses nothing.
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { type ScriptStep, withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { startFakeSignalDaemon } from "../channels/fixtures/fake_signal_daemon.ts";
import { coopToml } from "./coop_toml.ts";
import { makeCoopHome } from "./gateway_process.ts";
import { messengerToml, startCoop } from "./messenger_process.ts";

const format = ANTHROPIC;
const BOB = { number: "+15550002", uuid: "b0b00000-0000-4000-8000-000000000002", name: "Bob" };

sandboxTest(
  "e2e signal: bob (matched by uuid) runs bash sandboxed; a daemon restart loses nothing",
  async () => {
    const daemon = startFakeSignalDaemon();
    const script: ScriptStep[] = [
      format.toolCall("call_1", "bash", [
        JSON.stringify({ command: "id; ls /home; echo s-$((6*7))" }),
      ]),
      (request) =>
        format.text([`Sandbox said: ${JSON.stringify(format.messages(request.body).at(-1))}`]),
      format.text(["back again"]),
    ];
    try {
      await withScriptedServer(script, async (server) => {
        const home = await makeCoopHome(
          coopToml({
            kind: format.kind,
            baseUrl: server.url,
            extra: messengerToml({ signal: { url: daemon.url, account: daemon.account } }),
          }).replace('match = ["http:bob"]', `match = ["signal:${BOB.uuid}"]`),
        );
        const coop = await startCoop(home, {}, /signal channel: \+15550000001/);
        try {
          daemon.directMessage(BOB, "run id please");
          const [reply] = await daemon.waitForSent(1, 60_000);
          assertEquals(reply.to, BOB.number);
          assertMatch(reply.message, /^Sandbox said: /);
          assertMatch(reply.message, /uid=0\(root\)/);
          assertMatch(reply.message, /\/home.*No such file or directory/);
          assertMatch(reply.message, /s-42/);
          assert(format.toolNames(server.requests[0].body).includes("bash"), "bob (full) has bash");
          assertMatch(
            String(server.requests[0].body.system),
            /talking with bob \(trust: full\) via signal/,
          );

          await daemon.restart();
          daemon.directMessage(BOB, "still there?");
          await daemon.waitForSent(2, 60_000);
          assertEquals(daemon.messagesTo(BOB.number).at(-1)?.message, "back again");
          assertEquals((await coop.stop()).code, 0, coop.stderr());
        } finally {
          await coop.stop("SIGKILL");
          await Deno.remove(home.dir, { recursive: true });
        }
      });
    } finally {
      await daemon.close();
    }
  },
);
