/**
 * A cron run is a session of its own: whatever `[session] upper = "session"` kept for it is
 * discarded when the run ends — also when it fails (as root and unprivileged, the real sandbox
 * over a `host` environment). The run below writes under `/usr` (into its session's layer), then
 * the provider refuses the next request: the run fails, and its layer must be gone all the same.
 */
import { existsSync, readdirSync } from "node:fs";
import { assertEquals, assertMatch } from "../assert.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import { sessionUppersDir } from "../../src/environments/environment_mounts.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { withSessionUpperGateway } from "./fixtures/session_upper_gateway.ts";

const WRITE = "mkdir -p /usr/local && echo mine > /usr/local/note && echo wrote";

/** Bob's session layers in the environment (one directory per session that had one). */
function sessionLayers(dir: string): string[] {
  return existsSync(dir) ? readdirSync(dir) : [];
}

sandboxTest("a failed cron run's session upper layer is discarded too", async () => {
  let layers = "";
  /** Bob's session layers as the command's result reaches the provider. */
  let duringRun: string[] = [];
  const script = [
    format.toolCall("c1", "bash", [JSON.stringify({ command: WRITE })]),
    // The run's second model call fails (not retried): the turn ends with a provider error.
    () => {
      duringRun = sessionLayers(layers);
      return {
        status: 400,
        headers: { "content-type": "application/json" },
        chunks: [JSON.stringify({ type: "error", error: { message: "refused by the test" } })],
      };
    },
  ];
  await withSessionUpperGateway(script, async ({ gateway, server, paths }) => {
    layers = sessionUppersDir(paths, "bob");
    const job = {
      name: "nightly",
      schedule: "0 3 * * *",
      user: "bob",
      message: "write a note",
      replyTo: { kind: "log" as const },
      sandbox: {},
    };
    const error = await gateway.runCronJob(job, new AbortController().signal).catch((e) => e);
    assertMatch(String(error?.message), /refused by the test/, "the run failed");
    assertEquals(server.requests.length, 2, "the command ran and its result was sent");
    assertMatch(JSON.stringify(format.messages(server.requests[1].body).at(-1)), /wrote/);
    assertEquals(duringRun.length, 1, "the run had a session layer while it ran");
    assertEquals(sessionLayers(layers), [], "the failed run's layer is gone");
  });
});
