/**
 * `coop start 2>&1 | tee log`, then Ctrl-C (which ends tee as well): stderr is a pipe nobody
 * reads any more. Every write there fails with EPIPE; the drain must still finish, record the
 * interrupted tool call's result and exit 0.
 */
import { assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { hostProcessesWith, markedSleep, sandboxTest } from "../sandbox/harness.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import {
  makeCoopHome,
  postMessage,
  sessionHistory,
  startGateway,
  stopGateway,
  until,
} from "./gateway_process.ts";

const BOB = { BOB_TOKEN: "bob-secret" };

sandboxTest(
  "e2e: SIGTERM mid-turn with a dead stderr (EPIPE): drained, tool result recorded, exit 0",
  async () => {
    const marker = markedSleep(43);
    const script = [
      ANTHROPIC.toolCall("c1", "bash", [JSON.stringify({ command: `${marker}; echo late` })]),
    ];
    await withScriptedServer(script, async (server) => {
      const extra = httpChannelToml(["bob"]);
      const home = await makeCoopHome(coopToml({ kind: "anthropic", baseUrl: server.url, extra }));
      const gateway = await startGateway(home, BOB, { closeStderrWhenListening: true });
      try {
        const pending = postMessage(gateway.url, BOB.BOB_TOKEN, {
          text: "sleep",
          session: "epipe1",
        })
          .catch((error: Error) => error);
        await until("the sandboxed sleep to start", () => hostProcessesWith(marker).length > 0);
        gateway.child.kill("SIGTERM");
        const status = await gateway.status;
        assertEquals(status.code, 0, "exit status with stderr gone");
        const response = await pending;
        assertEquals(response instanceof Error ? response.message : response.status, 503);
        assertEquals(hostProcessesWith(marker), [], "no sandboxed process outlives the gateway");
        const history = sessionHistory(home, { channel: "http", user: "bob", session: "epipe1" });
        assertEquals(history.map((m) => m.role), ["user", "assistant", "tool"]);
        assertMatch(JSON.stringify(history[2].content), /killed by SIGKILL/);
      } finally {
        await stopGateway(gateway);
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  },
);
