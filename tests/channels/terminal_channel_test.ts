import { PassThrough } from "node:stream";
import { assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";
import { runTerminalChannel, sanitizeForTerminal } from "../../src/channels/terminal_channel.ts";
import type { IncomingMessage } from "../../src/gateway/turn_handler.ts";

async function chat(lines: string[]) {
  const input = new PassThrough(), output = new PassThrough();
  let shown = "";
  output.on("data", (c) => (shown += String(c)));
  const seen: IncomingMessage[] = [];
  let n = 0;
  const done = runTerminalChannel({
    sender: "default",
    input,
    output,
    status: () => Promise.resolve("you are owner (trust owner); 🔒 Sandbox: linux"),
    handle: (m) => {
      seen.push(m);
      m.onEvent?.({ type: "tool_start", name: "bash", sandboxed: true, summary: "ls \x1b[31m/" });
      m.onEvent?.({ type: "tool_end", name: "bash", sandboxed: true, exitCode: 0, isError: false });
      m.onEvent?.({ type: "text", text: "reply\x1b]52;c;ZXZpbA==\x07 done" });
      return Promise.resolve({ reply: "reply done", session: m.session ?? `s${++n}`, tools: [] });
    },
  });
  for (const line of lines) input.write(`${line}\n`);
  input.end();
  assertEquals(await done, 0);
  return { shown, seen };
}

Deno.test("messages go to the gateway as terminal:default; the session carries on", async () => {
  const { seen } = await chat(["hello", "again"]);
  assertEquals(seen.map((m) => [m.channel, m.sender, m.text, m.session]), [
    ["terminal", "default", "hello", undefined],
    ["terminal", "default", "again", "s1"],
  ]);
});

Deno.test("/clear starts a new session, /status shows who you are, /quit stops", async () => {
  const { seen, shown } = await chat(["one", "/clear", "two", "/status", "/quit", "never"]);
  assertEquals(seen.map((m) => m.session), [undefined, undefined]);
  assertMatch(shown, /\(new session\)/);
  assertMatch(shown, /you are owner \(trust owner\)/);
  assertEquals(seen.length, 2);
});

Deno.test("sandboxed tool calls are marked 🔒 and escape sequences never reach the terminal", async () => {
  const { shown } = await chat(["hi"]);
  assertMatch(shown, /🔒 bash: ls \//);
  assertMatch(shown, /↳ exit 0/);
  assertMatch(shown, /reply done/);
  assertNotIncludes(shown, "\x1b");
  assertNotIncludes(shown, "ZXZpbA==");
});

Deno.test("sanitizeForTerminal removes OSC, CSI and C0/C1 controls but keeps text, tabs, newlines", () => {
  const hostile = "a\x1b]8;;http://evil\x07link\x1b]8;;\x07\tb\x1b[2J\x1b[31mred\x9b\x07\nc\x1bc";
  const clean = sanitizeForTerminal(hostile);
  assertEquals(clean, "alink\tbred\nc");
  const controls = [...clean].filter((c) => c.charCodeAt(0) < 0x20 && c !== "\t" && c !== "\n");
  assertEquals(controls, []);
});

Deno.test("on a TTY, Ctrl-D while a turn runs ends the REPL cleanly after the turn", async () => {
  const input = Object.assign(new PassThrough(), { isTTY: true, setRawMode: () => {} });
  const output = new PassThrough();
  let shown = "";
  output.on("data", (c) => (shown += String(c)));
  const seen: string[] = [];
  const done = runTerminalChannel({
    sender: "default",
    input,
    output,
    status: () => Promise.resolve(""),
    handle: async (m) => {
      seen.push(m.text);
      input.write("\x04"); // Ctrl-D on an empty line: readline closes
      await new Promise((resolve) => setTimeout(resolve, 10));
      return { reply: "", session: "s1", tools: [] };
    },
  });
  input.write("hi\r");
  assertEquals(await done, 0);
  assertEquals(seen, ["hi"]);
  assertMatch(shown, /> .*hi/); // readline drew the prompt and echoed the line it edited
});
