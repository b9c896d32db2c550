/**
 * `coop chat` driven through a real pseudo-terminal (util-linux `script`): the owner's bash runs
 * on the host, the tool line says so, `/status` answers, and Ctrl-C (a real SIGINT from the
 * terminal's line discipline) cancels a running turn and kills its command.
 */
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { hostProcessesWith, markedSleep, sandboxTest } from "../sandbox/harness.ts";
import { coopToml } from "./coop_toml.ts";
import { coopArgv, makeCoopHome } from "./gateway_process.ts";

const format = ANTHROPIC;
const SHADOW = "cat /etc/shadow; ls /home; id";

function config(baseUrl: string): string {
  return coopToml({ kind: "anthropic", baseUrl });
}

async function hostId(): Promise<string> {
  const out = await new Deno.Command("id", { stdout: "piped" }).output();
  return new TextDecoder().decode(out.stdout).trim();
}

/** A process on a pseudo-terminal: what it printed so far, and keystrokes in. */
class Terminal {
  #text = "";
  readonly #child: Deno.ChildProcess;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #reading: Promise<void>;

  constructor(argv: string[], env: Record<string, string>) {
    const command = argv.map((a) => `'${a.replaceAll("'", "'\\''")}'`).join(" ");
    // script(1) runs the command on a new pty: stdin is typed into it, its output comes back.
    // `exec`: without it a shell that is not bash stays in the foreground group, also gets the
    // Ctrl-C, and reports 130 when coop exits.
    const child = new Deno.Command("script", {
      args: ["-q", "-e", "-f", "-c", `exec ${command}`, "/dev/null"],
      env,
      clearEnv: true,
      stdin: "piped",
      stdout: "piped",
      stderr: "inherit",
    }).spawn();
    this.#child = child;
    this.#writer = child.stdin.getWriter();
    this.#reading = (async () => {
      const decoder = new TextDecoder();
      for await (const chunk of child.stdout) {
        this.#text += decoder.decode(chunk, { stream: true });
      }
    })();
  }

  get text(): string {
    return this.#text;
  }

  async type(keys: string): Promise<void> {
    await this.#writer.write(new TextEncoder().encode(keys));
  }

  async waitFor(pattern: RegExp | string, from = 0, ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    const found = () =>
      typeof pattern === "string"
        ? this.#text.indexOf(pattern, from) >= 0
        : pattern.test(this.#text.slice(from));
    while (!found()) {
      if (Date.now() > deadline) {
        throw new Error(`no ${pattern} on the terminal after ${ms} ms; it shows:\n${this.#text}`);
      }
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  async close(): Promise<Deno.CommandStatus> {
    await this.#writer.close().catch(() => {});
    const status = await this.#child.status;
    await this.#reading;
    return status;
  }

  kill(): void {
    try {
      this.#child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }
}

sandboxTest(
  "e2e: the owner in coop chat (a real pty) runs bash on the host; Ctrl-C cancels",
  async () => {
    const marker = markedSleep(43);
    const script = [
      format.toolCall("t1", "bash", [JSON.stringify({ command: SHADOW })]),
      format.text(["Ran it ", "on your machine."]),
      format.toolCall("t2", "bash", [JSON.stringify({ command: `${marker}; echo never` })]),
    ];
    await withScriptedServer(script, async (server) => {
      const home = await makeCoopHome(config(server.url));
      const terminal = new Terminal(
        coopArgv("chat", "--config", home.config),
        home.env({ TERM: "dumb", COOP_LOG: "warning" }),
      );
      try {
        await terminal.waitFor("You are alice (trust owner).");
        await terminal.waitFor("> ");
        await terminal.type("show me\n");
        await terminal.waitFor("Ran it on your machine.");
        assertMatch(terminal.text, /⚠ host bash: cat \/etc\/shadow; ls \/home; id/);
        assert(!terminal.text.includes("🔒 bash"), "the owner's bash is not marked sandboxed");

        const result = JSON.stringify(format.messages(server.requests[1].body).at(-1));
        assert(result.includes(await hostId()), `the host's own id is in the result: ${result}`);
        if (Deno.uid() === 0) assertMatch(result, /root:[^:]*:/, "root reads the host's shadow");
        else assertMatch(result, /\/etc\/shadow: Permission denied/);

        const statusFrom = terminal.text.length;
        await terminal.type("/status\n");
        await terminal.waitFor(/user alice · trust owner · terminal:default/, statusFrom);

        // Ctrl-C while the owner's command runs: the turn is cancelled and the command killed.
        const cancelFrom = terminal.text.length;
        await terminal.type("sleep please\n");
        const deadline = Date.now() + 20_000;
        while (hostProcessesWith(marker).length === 0) {
          if (Date.now() > deadline) throw new Error(`the sleep never started:\n${terminal.text}`);
          await new Promise((r) => setTimeout(r, 20));
        }
        await terminal.type("\x03");
        await terminal.waitFor("(cancelled)", cancelFrom);
        await terminal.waitFor("> ", terminal.text.indexOf("(cancelled)", cancelFrom));
        const gone = Date.now() + 5000;
        while (hostProcessesWith(marker).length > 0 && Date.now() < gone) {
          await new Promise((r) => setTimeout(r, 20));
        }
        assertEquals(hostProcessesWith(marker), [], "Ctrl-C killed the owner's command");
        assertEquals(
          server.requests.length,
          3,
          "the cancelled turn asked the provider nothing more",
        );

        await terminal.type("/quit\n");
        const status = await terminal.close();
        assertEquals(status.code, 0, terminal.text);
      } finally {
        terminal.kill();
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  },
);

sandboxTest(
  "e2e: coop chat on a real terminal edits lines and recalls them from history",
  async () => {
    const script = [
      format.text(["first reply"]),
      format.text(["second reply"]),
      format.text([
        "third reply",
      ]),
    ];
    await withScriptedServer(script, async (server) => {
      const home = await makeCoopHome(config(server.url));
      const terminal = new Terminal(
        coopArgv("chat", "--config", home.config),
        home.env({ TERM: "xterm-256color", COOP_LOG: "warning" }),
      );
      const lastUserText = (i: number) =>
        JSON.stringify(format.messages(server.requests[i].body).at(-1));
      try {
        await terminal.waitFor("You are alice (trust owner).");
        await terminal.waitFor("> ");
        // "ab", left arrow, "X", Enter: the line is edited in place to "aXb".
        await terminal.type("ab\x1b[DX\r");
        await terminal.waitFor("first reply");
        assertMatch(lastUserText(0), /"aXb"/);
        // Up arrow recalls the last line; Enter sends it again.
        const recallFrom = terminal.text.length;
        await terminal.type("\x1b[A\r");
        await terminal.waitFor("second reply", recallFrom);
        assertMatch(lastUserText(1), /"aXb"/);
        // Ctrl-A jumps to the start of the line: "orld", Ctrl-A, "w" is "world".
        const homeFrom = terminal.text.length;
        await terminal.type("orld\x01w\r");
        await terminal.waitFor("third reply", homeFrom);
        assertMatch(lastUserText(2), /"world"/);
        assertEquals(server.requests.length, 3);
        await terminal.type("/quit\r");
        const status = await terminal.close();
        assertEquals(status.code, 0, terminal.text);
      } finally {
        terminal.kill();
        await Deno.remove(home.dir, { recursive: true });
      }
    });
  },
);
