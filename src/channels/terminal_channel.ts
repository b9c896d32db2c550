/**
 * The terminal channel (`coop chat`): a line-oriented REPL as `terminal:default`. Replies
 * stream as they arrive; tool calls show 🔒 when sandboxed; Ctrl-C cancels the running turn
 * (and exits when idle); `/clear` starts a new session; `/status` shows who you are.
 * @module
 */
import readline from "node:readline";
import type { Readable, Writable } from "node:stream";
import type { TurnEvent, TurnHandler } from "./turn_handler.ts";

/** What the REPL needs besides the turn handler. */
export interface TerminalChannelOptions {
  handle: TurnHandler;
  /** The terminal sender id (`default` unless configured). */
  sender: string;
  /** Forgets a session's stored history (`/clear`). */
  clear?: (session: string) => void;
  /** Text for `/status`: user, trust, sandbox line. */
  status: () => Promise<string>;
  input: Readable;
  output: Writable;
  /** Resolves when the user asks to quit or input ends. */
  quit?: AbortSignal;
}

// OSC strings (hyperlinks, clipboard writes), CSI sequences, other two-byte escapes, and the C0
// and C1 controls except tab and newline: what a command's output could use to drive the
// operator's terminal (ATTACKS.md T3).
const CONTROLS =
  // deno-lint-ignore no-control-regex
  /\x1b\][^\x07\x1b]*(\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]|\x1b.|[\x00-\x08\x0b-\x1f\x7f-\x9f]/g;

/** Strips control characters and escape sequences from untrusted text before it reaches a tty. */
export function sanitizeForTerminal(text: string): string {
  return text.replace(CONTROLS, "");
}

function describe(event: TurnEvent): string {
  if (event.type === "tool_start") {
    return `\n${event.sandboxed ? "🔒" : "⚠ host"} ${event.name}: ${
      sanitizeForTerminal(event.summary)
    }\n`;
  }
  if (event.type === "tool_end") {
    const how = event.isError
      ? "error"
      : event.exitCode === null
      ? "done"
      : `exit ${event.exitCode}`;
    return `  ↳ ${how}\n`;
  }
  return sanitizeForTerminal(event.text);
}

/** Runs the REPL until input ends or `/quit`; returns the exit status. */
export async function runTerminalChannel(options: TerminalChannelOptions): Promise<number> {
  const out = (text: string) => options.output.write(text);
  const rl = readline.createInterface({ input: options.input, terminal: false });
  let session: string | undefined;
  let running: AbortController | undefined;
  const onInterrupt = () => {
    if (running) {
      running.abort();
      out("\n(cancelled)\n");
    } else {
      rl.close();
    }
  };
  Deno.addSignalListener("SIGINT", onInterrupt);
  out("coop chat — /clear, /status, /quit; Ctrl-C cancels a turn\n> ");
  try {
    for await (const line of rl) {
      const text = line.trim();
      if (text === "/quit" || text === "/exit") break;
      if (text === "/clear") {
        if (session !== undefined) options.clear?.(session);
        session = undefined;
        out("(new session)\n> ");
        continue;
      }
      if (text === "/status") {
        out(`${await options.status()}\n> `);
        continue;
      }
      if (text === "") {
        out("> ");
        continue;
      }
      running = new AbortController();
      try {
        const outcome = await options.handle({
          channel: "terminal",
          sender: options.sender,
          text,
          session,
          signal: running.signal,
          onEvent: (event) => out(describe(event)),
        });
        session = outcome.session;
        out("\n> ");
      } catch (error) {
        out(running.signal.aborted ? "> " : `\n(error: ${(error as Error).message})\n> `);
      } finally {
        running = undefined;
      }
    }
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
    rl.close();
  }
  out("\n");
  return 0;
}
