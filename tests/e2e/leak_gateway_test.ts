/**
 * Leak detection end to end (issue 13): the owner leaves the gateway's real provider key in
 * Bob's workspace — as it is, base64, hex — and a fake AWS key; Bob's sandboxed `bash` cats
 * them. The tool results the model server receives hold markers, not the values; so does the
 * reply Bob gets (the model repeats the key, split across stream chunks); `leak.detected` is
 * logged without the value; `GET /status` counts them.
 */
import { Buffer } from "node:buffer";
import { join } from "node:path";
import { assert, assertEquals, assertNotIncludes } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { coopToml, httpChannelToml } from "./coop_toml.ts";
import { makeCoopHome, postMessage, startGateway, stopGateway } from "./gateway_process.ts";

const KEY = "sk-scripted-Zq3vR8tW1xY6uI0oP5aS2dF7gH4jK9lM3nB8vC1xZ";
const TOKENS = { BOB_TOKEN: "bob-token-4f9a2c7e1d" };
const AWS = "AKIAIOSFODNN7EXAMPLE";
const FILES: Record<string, string> = {
  "key.txt": `ANTHROPIC_API_KEY=${KEY}\n`,
  "key.b64": `${Buffer.from(`ANTHROPIC_API_KEY=${KEY}\n`).toString("base64")}\n`,
  "key.hex": `${Buffer.from(KEY).toString("hex")}\n`,
  "aws.txt": `[default]\naws_access_key_id = ${AWS}\n`,
};
/** Every form of a value that must never leave: the key's three, the AWS key id. */
const VALUES = [
  KEY,
  Buffer.from(KEY).toString("base64").slice(4, 40),
  Buffer.from(KEY).toString("hex").slice(0, 40),
  AWS,
  TOKENS.BOB_TOKEN,
];

function assertClean(text: string, where: string): void {
  for (const value of VALUES) assertNotIncludes(text, value, `${where} holds a secret`);
}

sandboxTest(
  "e2e leaks: bob's tool results and reply carry markers, not the gateway's key",
  async () => {
    const script = [
      ...Object.keys(FILES).map((name, i) =>
        ANTHROPIC.toolCall(`call_${i}`, "bash", [JSON.stringify({ command: `cat ${name}` })])
      ),
      ANTHROPIC.text([
        `Found: ${KEY.slice(0, 25)}`,
        `${KEY.slice(25)} and `,
        `${TOKENS.BOB_TOKEN}.`,
      ]),
    ];
    await withScriptedServer(script, async (server) => {
      const home = await makeCoopHome(coopToml({
        kind: "anthropic",
        baseUrl: ANTHROPIC.baseUrl(server.url),
        extra: `api_key_env = "SCRIPTED_KEY"\n${httpChannelToml(["bob"])}`,
      }));
      const bobDir = join(home.dir, "workspace", "bob");
      await Deno.mkdir(bobDir, { recursive: true, mode: 0o700 });
      for (const [name, text] of Object.entries(FILES)) {
        await Deno.writeTextFile(join(bobDir, name), text);
      }
      const logFile = join(home.dir, "coop.log.jsonl");
      const gateway = await startGateway(home, {
        ...TOKENS,
        SCRIPTED_KEY: KEY,
        COOP_LOG_FILE: logFile,
      });
      try {
        const bob = await postMessage(gateway.url, TOKENS.BOB_TOKEN, { text: "show my files" });
        assertEquals(bob.status, 200, JSON.stringify(bob.json));
        assertEquals(server.requests.length, 5);
        const markers = ["provider key", "provider key", "provider key", "aws access key id"];
        markers.forEach((label, i) => {
          const result = JSON.stringify(ANTHROPIC.messages(server.requests[i + 1].body).at(-1));
          assert(result.includes(`[redacted: ${label}]`), `tool result ${i}: ${result}`);
          assertClean(result, `the tool result of call ${i}`);
        });
        assertClean(JSON.stringify(server.requests.map((r) => r.body)), "a model request");
        const reply = String(bob.json.reply);
        assertEquals(reply, "Found: [redacted: provider key] and [redacted: channel token].");

        const status = await fetch(`${gateway.url}/status`, {
          headers: { authorization: `Bearer ${TOKENS.BOB_TOKEN}` },
        });
        const leaks = (await status.json()).leaks;
        assertEquals(leaks.byPath, { tool_result: 4, reply: 2 });
        assertEquals(leaks.byKind, { provider_key: 4, aws_access_key_id: 1, channel_token: 1 });
        assertEquals(leaks.detected, 6);
        assertEquals((await fetch(`${gateway.url}/status`)).status, 401);

        await stopGateway(gateway);
        const log = await Deno.readTextFile(logFile);
        assertClean(log, "the log file");
        assertClean(gateway.stderr(), "the gateway's stderr");
        const detected = log.split("\n").filter(Boolean).map((l) => JSON.parse(l))
          .filter((r) => r.properties?.event === "leak.detected").map((r) => r.properties);
        assertEquals(detected.length, 6);
        for (const record of detected) {
          assertEquals(record.principal, "bob");
          assert(["tool_result", "reply"].includes(record.where), JSON.stringify(record));
          assert(typeof record.kind === "string" && typeof record.form === "string");
        }
        assert(gateway.stderr().includes("leak.detected"), "logged on stderr too");
      } finally {
        await stopGateway(gateway);
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  },
);
