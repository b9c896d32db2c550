/**
 * `send_file` end to end over HTTP: a scripted model asks for a file from Bob's workspace; the
 * file arrives in the `POST /v1/messages` response as base64, and one outside it never does.
 */
import { join } from "node:path";
import { assertEquals, assertMatch } from "../assert.ts";
import { createHttpHandler } from "../../src/channels/http_channel.ts";
import { parseConfig } from "../../src/config/config.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { MAX_FILES_PER_TURN } from "../../src/gateway/agent_tools.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { coopToml } from "../e2e/coop_toml.ts";

const format = ANTHROPIC;

async function post(handler: (r: Request) => Promise<Response>, text: string) {
  const response = await handler(
    new Request("http://coop/v1/messages", {
      method: "POST",
      body: JSON.stringify({ text }),
      headers: { authorization: "Bearer bob-token" },
    }),
  );
  return { status: response.status, json: await response.json() };
}

Deno.test("http: a file send_file sends arrives in the response, inline as base64", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-sendfile-" }));
  const script = [
    format.toolCall("t1", "send_file", ['{"path": "report.csv"}']),
    format.text(["Here is your report."]),
    format.toolCall("t2", "send_file", ['{"path": "../../etc/passwd"}']),
    format.text(["I cannot send that."]),
  ];
  try {
    await withScriptedServer(script, async (server) => {
      const text = coopToml({ kind: "anthropic", baseUrl: server.url }).replaceAll("{{dir}}", dir);
      const gateway = Gateway.open(parseConfig(text, join(dir, "coop.toml"), dir), {
        executor: { env: {}, sandbox: () => Promise.reject(new Error("no command runs")) },
      });
      try {
        await Deno.mkdir(join(dir, "workspace", "bob"), { recursive: true });
        const csv = "name,count\nwidgets,3\n";
        await Deno.writeTextFile(join(dir, "workspace", "bob", "report.csv"), csv);
        const handler = createHttpHandler({
          tokens: [{ id: "bob", token: "bob-token" }],
          maxBodyBytes: 4096,
          handle: gateway.handle,
        });

        const sent = await post(handler, "send me the report");
        assertEquals(sent.status, 200, JSON.stringify(sent.json));
        assertEquals(sent.json.reply, "Here is your report.");
        assertEquals(sent.json.files, [{
          name: "report.csv",
          mediaType: "text/csv",
          size: csv.length,
          base64: btoa(csv),
        }]);
        assertEquals(sent.json.tools, [{ name: "send_file", sandboxed: true, exitCode: null }]);

        const refused = await post(handler, "send me /etc/passwd");
        assertEquals(refused.status, 200);
        assertEquals(refused.json.files, undefined, "nothing sent");
        const result = JSON.stringify(format.messages(server.requests[3].body).at(-1));
        assertMatch(result, /must not contain/);
      } finally {
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("gateway: one turn sends at most MAX_FILES_PER_TURN files; more are tool errors", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-sendfile-" }));
  const calls = Array.from(
    { length: MAX_FILES_PER_TURN + 1 },
    (_, i) => format.toolCall(`t${i}`, "send_file", ['{"path": "a.txt"}']),
  );
  try {
    await withScriptedServer([...calls, format.text(["sent"])], async (server) => {
      const text = coopToml({ kind: "anthropic", baseUrl: server.url }).replaceAll("{{dir}}", dir);
      const gateway = Gateway.open(parseConfig(text, join(dir, "coop.toml"), dir), {
        executor: { env: {}, sandbox: () => Promise.reject(new Error("no command runs")) },
      });
      try {
        await Deno.mkdir(join(dir, "workspace", "bob"), { recursive: true });
        await Deno.writeTextFile(join(dir, "workspace", "bob", "a.txt"), "a");
        const outcome = await gateway.handle({ channel: "http", sender: "bob", text: "go" });
        assertEquals(outcome.files?.length, MAX_FILES_PER_TURN);
        const last = JSON.stringify(format.messages(server.requests.at(-1)!.body).at(-1));
        assertMatch(last, /already sends 10 files/);
      } finally {
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
