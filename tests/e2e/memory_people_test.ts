/**
 * Memory per person end to end through `coop start`'s HTTP channel: two `inner` users each keep a
 * personal memory; neither one's search nor `memory_get` returns the other's (what the model
 * server receives proves it); the owner lists both with `coop memory list` beside the running
 * gateway, and removes one with `coop memory rm`.
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { runCommand } from "../fixtures/run_command.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import {
  coopArgv,
  type CoopHome,
  makeCoopHome,
  postMessage,
  startGateway,
  stopGateway,
} from "./gateway_process.ts";

const TOKENS = { DAVE_TOKEN: "dave-secret-1", ERIN_TOKEN: "erin-secret-2" };
const format = ANTHROPIC;

const INNER_USERS = `
[[users]]
name = "dave"
trust = "inner"
match = ["http:dave"]

[[users]]
name = "erin"
trust = "inner"
match = ["http:erin"]
`;

function coop(home: CoopHome, ...args: string[]) {
  const [cmd, ...rest] = coopArgv("memory", ...args, "--config", home.config);
  return runCommand(cmd, rest, { env: home.env(), clearEnv: true });
}

/** The tool result the model server received in request `n` (the last message). */
function toolResult(requests: { body: Record<string, unknown> }[], n: number): string {
  return JSON.stringify(format.messages(requests[n].body).at(-1));
}

sandboxTest(
  "e2e: two inner users' personal memories stay apart; the owner lists both",
  async () => {
    const call = (id: string, tool: string, args: unknown) =>
      format.toolCall(id, tool, [JSON.stringify(args)]);
    const script = [
      call("c1", "memory_write", { store: "personal", text: "dave's locker code is 1234" }),
      format.text(["noted"]),
      call("c2", "memory_write", { store: "personal", text: "erin's locker code is 9876" }),
      format.text(["noted"]),
      call("c3", "memory_search", { query: "locker code" }),
      format.text(["found"]),
      call("c4", "memory_get", { id: 2 }),
      format.text(["nothing"]),
      call("c5", "memory_search", { query: "locker code" }),
      format.text(["found"]),
      call("c6", "memory_get", { id: 1 }),
      format.text(["nothing"]),
    ];
    await withScriptedServer(script, async (server) => {
      const home = await makeCoopHome(coopToml({
        kind: format.kind,
        baseUrl: format.baseUrl(server.url),
        extra: INNER_USERS + httpChannelToml(["dave", "erin"]),
      }));
      const gateway = await startGateway(home, TOKENS);
      try {
        const say = async (token: string, text: string) => {
          const r = await postMessage(gateway.url, token, { text });
          assertEquals(r.status, 200, JSON.stringify(r.json));
        };
        await say(TOKENS.DAVE_TOKEN, "remember my locker code 1234");
        assertMatch(toolResult(server.requests, 1), /remembered in personal \(memory #1\)/);
        await say(TOKENS.ERIN_TOKEN, "remember my locker code 9876");
        assertMatch(toolResult(server.requests, 3), /remembered in personal \(memory #2\)/);

        // Dave searches and asks for #2 by id: only his own comes back.
        await say(TOKENS.DAVE_TOKEN, "what is my locker code?");
        const daveSearch = toolResult(server.requests, 5);
        assertMatch(daveSearch, /1234/);
        assert(!daveSearch.includes("9876"), daveSearch);
        await say(TOKENS.DAVE_TOKEN, "and memory 2?");
        const daveGet = toolResult(server.requests, 7);
        assertMatch(daveGet, /there is no memory #2 this conversation may read/);
        assert(!daveGet.includes("9876"), daveGet);

        // Erin likewise.
        await say(TOKENS.ERIN_TOKEN, "what is my locker code?");
        const erinSearch = toolResult(server.requests, 9);
        assertMatch(erinSearch, /9876/);
        assert(!erinSearch.includes("1234"), erinSearch);
        await say(TOKENS.ERIN_TOKEN, "and memory 1?");
        assertMatch(
          toolResult(server.requests, 11),
          /there is no memory #1 this conversation may read/,
        );

        // The owner, beside the running gateway: both, with author, channel and trust.
        const list = await coop(home, "list", "--json");
        assertEquals(list.code, 0, list.stderr);
        const entries = JSON.parse(list.stdout) as Array<Record<string, unknown>>;
        assertEquals(
          entries.map((e) => [e.id, e.store, e.person, e.author, e.channel, e.trust]),
          [
            [2, "personal", "erin", "erin", "http", "inner"],
            [1, "personal", "dave", "dave", "http", "inner"],
          ],
        );
        const human = await coop(home, "list", "--user", "dave");
        assertEquals(human.code, 0, human.stderr);
        assertMatch(
          human.stdout,
          /^#1 personal:dave — dave via http \(inner\), .*: dave's locker code is 1234\n$/,
        );
        const none = await coop(home, "list", "--store", "shared");
        assertEquals(none.stdout, "no memories\n");

        const rm = await coop(home, "rm", "2");
        assertEquals(rm.code, 0, rm.stderr);
        assertMatch(rm.stdout, /^removed #2 personal:erin/);
        const again = await coop(home, "rm", "2");
        assertEquals(again.code, 1);
        assertMatch(again.stderr, /there is no memory #2/);
        const bad = await coop(home, "list", "--store", "attic");
        assertEquals(bad.code, 2);
        assertMatch(bad.stderr, /--store must be one of private, shared, social, personal/);
        const after = JSON.parse((await coop(home, "list", "--json")).stdout) as unknown[];
        assertEquals(after.length, 1);
      } finally {
        await stopGateway(gateway);
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  },
);
