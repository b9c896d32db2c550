/**
 * `coop start` under `ulimit -n 1024` against 1,000 idle connections and 1,000 half-sent
 * requests: it keeps answering `/healthz` and runs a real turn (a sandboxed bash call), every
 * hostile connection is closed within `headers_timeout`, and the gateway still stops cleanly.
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { readUntilClosed } from "../fixtures/read_until_closed.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import { makeCoopHome, postMessage, startGateway, stopGateway } from "./gateway_process.ts";

const BOB = { BOB_TOKEN: "bob-flood-secret" };
const HEADERS_TIMEOUT_MS = 2_000;
const EACH = 1_000;

sandboxTest(
  "e2e: 1,000 idle and 1,000 half-sent connections under ulimit -n 1024: /healthz and a turn still answer, all are closed in time",
  async () => {
    const script = [
      ANTHROPIC.toolCall("c1", "bash", [JSON.stringify({ command: "echo flood-ok" })]),
      ANTHROPIC.text(["still ", "here"]),
    ];
    await withScriptedServer(script, async (provider) => {
      const http = httpChannelToml(["bob"]).replace(
        'listen = "127.0.0.1:0"',
        `listen = "127.0.0.1:0"\nheaders_timeout = "${HEADERS_TIMEOUT_MS}ms"\nrequest_timeout = "3s"`,
      );
      const home = await makeCoopHome(
        coopToml({ kind: "anthropic", baseUrl: provider.url, extra: http }),
      );
      const gateway = await startGateway(home, BOB, { fileLimit: 1024 });
      const port = Number(new URL(gateway.url).port);
      const hostile: Promise<string>[] = [];
      // How long each hostile connection lived, stamped as it closes: the turn below must not
      // count in it (a slow turn on a loaded machine is not a connection left open).
      let longestMs = 0;
      const lifetime = (connected: number) => (text: string) => {
        longestMs = Math.max(longestMs, performance.now() - connected);
        return text;
      };
      try {
        const encoder = new TextEncoder();
        const half = encoder.encode("POST /v1/messages HTTP/1.1\r\nHost: x\r\nContent-Length: 9");
        for (let i = 0; i < EACH; i++) {
          const connected = performance.now();
          const idle = await Deno.connect({ hostname: "127.0.0.1", port });
          const sending = await Deno.connect({ hostname: "127.0.0.1", port });
          await sending.write(half);
          hostile.push(
            readUntilClosed(idle).then(lifetime(connected)),
            readUntilClosed(sending).then(lifetime(connected)),
          );
        }
        const opened = performance.now();

        const health = await fetch(`${gateway.url}/healthz`);
        assertEquals(health.status, 200);
        assertEquals(await health.json(), { ok: true });
        const turn = await postMessage(gateway.url, BOB.BOB_TOKEN, { text: "are you there?" });
        assertEquals(turn.status, 200, JSON.stringify(turn.json));
        assertEquals(turn.json.reply, "still here");
        assertEquals(turn.json.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        assertMatch(JSON.stringify(ANTHROPIC.messages(provider.requests[1].body)), /flood-ok/);

        // Every hostile connection is closed by the server, none later than the deadline
        // (plus slack for a loaded machine: a connection's deadline starts when the server
        // accepts it from the backlog), and none got a reply.
        let timer: ReturnType<typeof setTimeout> | undefined;
        const texts = await Promise.race([
          Promise.all(hostile),
          new Promise<never>((_, reject) =>
            timer = setTimeout(
              () => reject(new Error("hostile connections still open")),
              Math.max(0, opened + HEADERS_TIMEOUT_MS + 10_000 - performance.now()),
            )
          ),
        ]).finally(() => clearTimeout(timer));
        assert(longestMs < HEADERS_TIMEOUT_MS + 5_000, `one closed after ${longestMs} ms`);
        assertEquals(texts.filter((t) => t !== "").length, 0, "no hostile connection got a reply");

        assertEquals((await fetch(`${gateway.url}/healthz`)).status, 200);
        gateway.child.kill("SIGTERM");
        const status = await gateway.status;
        assertEquals(status.code, 0, gateway.stderr());
        assert(!/panicked|Too many open files \(os error 24\)\n\s+at/.test(gateway.stderr()));
      } finally {
        await stopGateway(gateway);
        await Promise.allSettled(hostile);
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  },
);
