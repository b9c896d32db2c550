/**
 * A cron job end to end: the real scheduler (on a manual clock) fires the job, the real gateway
 * runs the turn as the job's user with the job's sandbox overrides in the real sandbox, and the
 * reply is POSTed to the job's callback.
 */
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { type CronReplyPayload, CronScheduler } from "../../src/cron/cron_scheduler.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { OPENAI } from "../agent/wire_formats.ts";
import { ManualClock } from "../gateway/manual_clock.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { coopToml } from "./coop_toml.ts";

const format = OPENAI;
const COMMAND = "id; df -k /tmp | tail -n 1";

function config(dir: string, baseUrl: string, callback: string): string {
  return coopToml({
    kind: format.kind,
    baseUrl,
    bob: '[users.sandbox]\ntmp_size = "2M"',
    extra: `
[[cron]]
name = "nightly"
schedule = "0 3 * * *"
user = "bob"
message = "nightly check"
reply_to = "${callback}"
[cron.sandbox]
tmp_size = "1M"
`,
  }).replaceAll("{{dir}}", dir);
}

sandboxTest(
  "e2e: a cron job runs as bob, sandboxed, with the job's overrides over bob's",
  async () => {
    const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-cron-e2e-" }));
    await Deno.chmod(dir, 0o755);
    const delivered: CronReplyPayload[] = [];
    const callback = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      async (r) => {
        delivered.push(await r.json());
        return new Response("ok");
      },
    );
    const script = [
      format.toolCall("c1", "bash", [JSON.stringify({ command: COMMAND })]),
      format.text(["All quiet."]),
    ];
    try {
      await withScriptedServer(script, async (server) => {
        const text = config(dir, server.url, `http://127.0.0.1:${callback.addr.port}/cron`);
        const gateway = Gateway.open(parseConfig(text, join(dir, "coop.toml"), dir));
        const clock = new ManualClock(Date.UTC(2026, 10, 23, 2, 59, 0));
        const cron = new CronScheduler({
          jobs: gateway.config.cron,
          runTurn: gateway.runCronJob,
          clock,
          timezone: "UTC",
        });
        try {
          cron.start();
          await clock.advance(60_000);
          await cron.whenIdle();
          const [status] = cron.status();
          assertEquals([status.runs, status.failures, status.lastError], [1, 0, null]);

          const result = JSON.stringify(format.messages(server.requests[1].body).at(-1));
          assertMatch(result, /uid=0\(root\) gid=0\(root\)/, "bash ran as sandbox root");
          // tmpfs /tmp of the job's 1M, not bob's 2M: the job's overrides apply over the user's.
          assertMatch(result, /tmpfs\s+1024\s/);
          assertEquals(delivered.length, 1);
          assertEquals(delivered[0].job, "nightly");
          assertEquals(delivered[0].user, "bob");
          assertEquals(delivered[0].ok, true);
          assertEquals(delivered[0].reply, "All quiet.");
          const session = delivered[0].session!;
          const history = gateway.sessions.history({ channel: "cron", user: "bob", session });
          assertEquals(history.map((m) => m.role), ["user", "assistant", "tool", "assistant"]);
          assert(history.every((m) => m.trust === "full" && m.principal === "bob"));
        } finally {
          await cron.stop();
          gateway.close();
        }
      });
    } finally {
      await callback.shutdown();
      await Deno.remove(dir, { recursive: true });
    }
  },
);
