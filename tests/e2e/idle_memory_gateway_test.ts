/**
 * `coop start` gives memory back when it comes to rest after a burst of turns: the release runs
 * (full GC and `malloc_trim`, logged as `memory.release`), the resident size drops, and the
 * gateway still answers afterwards.
 */
import { join } from "node:path";
import { assert, assertEquals } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import { makeCoopHome, postMessage, startGateway, stopGateway, until } from "./gateway_process.ts";

const BOB = { BOB_TOKEN: "bob-secret" };
const CLIENTS = 6;
const TURNS_EACH = 10;

interface ReleaseEvent {
  rssBefore: number;
  rssAfter: number;
  collected: boolean;
  trimmed: boolean;
}

function releases(logFile: string): ReleaseEvent[] {
  let text = "";
  try {
    text = Deno.readTextFileSync(logFile);
  } catch {
    return [];
  }
  return text.split("\n").filter((line) => line.includes('"memory.release"')).map((line) =>
    JSON.parse(line).properties as ReleaseEvent
  );
}

sandboxTest("e2e: after a burst of turns the resting gateway releases memory", async () => {
  const turns = CLIENTS * TURNS_EACH + 1;
  const replies = Array.from({ length: turns }, (_, i) => ANTHROPIC.text([`reply ${i}`]));
  const home = await makeCoopHome(
    coopToml({ kind: "anthropic", baseUrl: "http://127.0.0.1:1", extra: httpChannelToml(["bob"]) }),
  );
  const logFile = join(home.dir, "coop-log.jsonl");
  try {
    await withScriptedServer(replies, async (server) => {
      const config = await Deno.readTextFile(home.config);
      await Deno.writeTextFile(
        home.config,
        config.replace(/base_url = ".*"/, `base_url = "${server.url}"`),
      );
      const gateway = await startGateway(home, { ...BOB, COOP_LOG_FILE: logFile });
      try {
        // A release may already follow the start-up's own work; count only later ones.
        await new Promise((resolve) => setTimeout(resolve, 2500));
        const before = releases(logFile).length;
        await Promise.all(Array.from({ length: CLIENTS }, async () => {
          for (let i = 0; i < TURNS_EACH; i++) {
            const { status } = await postMessage(gateway.url, BOB.BOB_TOKEN, { text: "hi" });
            assertEquals(status, 200);
          }
        }));
        await until("a memory release after the burst", () => releases(logFile).length > before);
        const event = releases(logFile).at(-1)!;
        assert(event.collected, "the full GC ran");
        assert(event.trimmed, "malloc_trim ran");
        assert(
          event.rssAfter < event.rssBefore,
          `resident size ${event.rssBefore} → ${event.rssAfter} MB`,
        );
        const after = await postMessage(gateway.url, BOB.BOB_TOKEN, { text: "still there?" });
        assertEquals(after.status, 200);
      } finally {
        await stopGateway(gateway);
      }
    });
  } finally {
    await Deno.remove(home.dir, { recursive: true });
  }
});
