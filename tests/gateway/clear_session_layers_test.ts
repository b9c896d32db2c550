/**
 * `/clear` from a messenger chat ends what `[session] upper = "session"` kept for that chat (as
 * root and unprivileged, the real sandbox over a `host` environment): bob's write under `/usr` in
 * his Telegram direct chat (session `tg<chat>`) lives in that session's layer; his `/clear` there
 * deletes the layer (and the history), and the next command of the chat no longer sees the file.
 * In a group, a member's commands get a layer of their own for that group — another group's
 * commands do not see it — and a member's `/clear` there discards it, and only it.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import { sessionUpper } from "../../src/environments/environment_mounts.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { withSessionUpperGateway } from "./fixtures/session_upper_gateway.ts";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;
const WRITE = "mkdir -p /usr/local && echo mine > /usr/local/note && echo wrote";
const READ = "cat /usr/local/note 2>&1; true";

sandboxTest("/clear in a messenger chat discards that session's upper layer", async () => {
  const script = [
    format.toolCall("c1", "bash", [JSON.stringify({ command: WRITE })]),
    format.text(["wrote it"]),
    format.toolCall("c2", "bash", [JSON.stringify({ command: READ })]),
    format.text(["read it"]),
    format.toolCall("c3", "bash", [JSON.stringify({ command: WRITE })]),
    format.text(["group wrote it"]),
    format.toolCall("c4", "bash", [JSON.stringify({ command: `${READ}; echo "[$COOP_SESSION]"` })]),
    format.text(["other group read it"]),
  ];
  await withSessionUpperGateway(script, async ({ gateway, server, file, paths }) => {
    // As the Telegram channel hands a direct message to the gateway.
    const bob = { channel: "telegram", sender: "4242", session: "tg4242" };
    const layer = sessionUpper(paths, "bob", { channel: "telegram", id: "tg4242" });
    const wrote = await gateway.handle({ ...bob, text: "write a note" });
    assertEquals(wrote.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
    assert(existsSync(join(layer.upper, "usr/local/note")), "the write is in the layer");

    const cleared = await gateway.handle({ ...bob, text: "/clear" });
    assertMatch(cleared.reply, /^Session cleared: /);
    assertEquals(existsSync(layer.dir), false, "the session's layer is gone");
    assertEquals(
      gateway.sessions.history({ channel: "telegram", user: "bob", session: "tg4242" }),
      [],
    );

    await gateway.handle({ ...bob, text: "read the note" });
    assertMatch(
      JSON.stringify(format.messages(server.requests[3].body).at(-1)),
      /No such file or directory/,
    );

    // Groups: bob's layer in each is his own for that group; /clear in one ends only it.
    const group = { channel: "telegram", sender: "4242", group: "-100", addressed: true };
    const other = { ...group, group: "-200" };
    const groupLayer = sessionUpper(paths, "bob", { channel: "telegram", id: "group:-100" });
    const otherLayer = sessionUpper(paths, "bob", { channel: "telegram", id: "group:-200" });
    await gateway.handle({ ...group, session: "tg-100", text: "write in the group" });
    assert(existsSync(join(groupLayer.upper, "usr/local/note")), "the group's layer");
    await gateway.handle({ ...other, session: "tg-200", text: "read in another group" });
    const otherResult = JSON.stringify(format.messages(server.requests[7].body).at(-1));
    assertMatch(otherResult, /No such file or directory/, "another group's layer is not his");
    assertMatch(otherResult, /\[group:-200\]/, "COOP_SESSION names the group");
    assert(existsSync(otherLayer.dir), "the other group's layer");
    const groupCleared = await gateway.handle({ ...group, session: "tg-100", text: "/clear" });
    assertMatch(groupCleared.reply, /^Session cleared: /);
    assertEquals(existsSync(groupLayer.dir), false, "the group session's layer is gone");
    assert(existsSync(otherLayer.dir), "the other group's layer stays");
    // coop sandbox clean keeps it too: its group's session exists.
    const clean = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", MAIN, "sandbox", "clean", "--json", "--config", file],
    }).output();
    assertEquals(clean.code, 0, new TextDecoder().decode(clean.stderr));
    assert(existsSync(otherLayer.dir), "clean kept a live group's layer");
  }, {
    extra: '[[groups]]\nname = "family"\nmatch = ["telegram:-100", "telegram:-200"]\n' +
      'trust = "inner"\n',
    edit: (toml) => toml.replace('match = ["http:bob"]', 'match = ["http:bob", "telegram:4242"]'),
  });
});
