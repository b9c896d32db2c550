/**
 * The terminal channel (`coop chat`): a line-oriented REPL as `terminal:default`. Replies
 * stream as they arrive; tool calls show 🔒 when sandboxed; Ctrl-C cancels the running turn
 * (and exits when idle); `/clear` starts a new session; `/status` shows who you are. On a
 * terminal, lines are edited and recalled with readline (arrows, Ctrl-A/E, history); piped
 * input is read line by line as it comes.
 * @module
 */
import readline from "node:readline";
import type { Readable, Writable } from "node:stream";
import type { TurnEvent, TurnHandler } from "../gateway/turn_handler.ts";

/** What the REPL needs besides the turn handler. */
export interface TerminalChannelOptions {
  handle: TurnHandler;
  /** The terminal sender id (`default` unless configured). */
  sender: string;
  /** Forgets a session's stored history (`/clear`). */
  clear?: (session: string) => void;
  /** Text for `/status`: user, trust, sandbox line. */
  status: () => Promise<string>;
  /** Where lines come from; a TTY (`isTTY`) gets line editing and history. */
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

/** Lines kept for recall with the up arrow (this process only: nothing is written to disk). */
const HISTORY_SIZE = 500;

/** Runs the REPL until input ends or `/quit`; returns the exit status. */
export async function runTerminalChannel(options: TerminalChannelOptions): Promise<number> {
  const out = (text: string) => options.output.write(text);
  const tty = (options.input as { isTTY?: boolean }).isTTY === true;
  // On a TTY readline puts the terminal in raw mode and edits the line itself: Ctrl-C then
  // arrives as a key (its "SIGINT" event), not as a signal from the line discipline.
  const rl = tty
    ? readline.createInterface({
      input: options.input,
      output: options.output,
      terminal: true,
      prompt: "> ",
      historySize: HISTORY_SIZE,
      removeHistoryDuplicates: true,
    })
    : readline.createInterface({ input: options.input, terminal: false });
  // Ctrl-D (or the end of input) may close readline while a turn still runs; a prompt after
  // that would throw ("readline was closed"). Piped input keeps its "> " as before.
  let closed = false;
  rl.on("close", () => (closed = true));
  const prompt = () => {
    if (!tty) out("> ");
    else if (!closed) rl.prompt();
  };
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
  rl.on("SIGINT", onInterrupt);
  Deno.addSignalListener("SIGINT", onInterrupt);
  out("coop chat — /clear, /status, /quit; Ctrl-C cancels a turn\n");
  prompt();
  try {
    for await (const line of rl) {
      const text = line.trim();
      if (text === "/quit" || text === "/exit") break;
      if (text === "/clear") {
        if (session !== undefined) options.clear?.(session);
        session = undefined;
        out("(new session)\n");
        prompt();
        continue;
      }
      if (text === "/status") {
        out(`${await options.status()}\n`);
        prompt();
        continue;
      }
      if (text === "") {
        prompt();
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
        out("\n");
        // The terminal is on the machine that holds the workspace: name the file, no download.
        for (const f of outcome.files ?? []) {
          out(`(file sent: ${f.name}, ${f.bytes.length} bytes, ${f.mediaType})\n`);
        }
      } catch (error) {
        if (!running.signal.aborted) out(`\n(error: ${(error as Error).message})\n`);
      } finally {
        running = undefined;
      }
      prompt();
    }
  } finally {
    Deno.removeSignalListener("SIGINT", onInterrupt);
    rl.close();
  }
  out("\n");
  return 0;
}
