/**
 * `coop chat [--config FILE]`: the terminal channel on this process's stdin/stdout, speaking as
 * `terminal:default` (or `[channels.terminal] user`).
 * @module
 */
import process from "node:process";
import { runTerminalChannel } from "../channels/terminal_channel.ts";
import { parseConfigOption, startGateway, type StartupDependencies } from "./gateway_startup.ts";
import { writeStderr } from "./stderr.ts";

/** The terminal's sender id: the REPL speaks as `terminal:default`. */
export const TERMINAL_SENDER = "default";

/** Runs the REPL until `/quit` or end of input; returns the exit status. */
export async function chatCommand(args: string[], deps: StartupDependencies = {}): Promise<number> {
  const file = parseConfigOption(args);
  const started = await startGateway(file, deps);
  if (typeof started === "number") return started;
  const { config, gateway, banner } = started;
  if (config.channels.terminal?.enabled === false) {
    gateway.close();
    writeStderr(`coop: [channels.terminal] enabled = false in ${file}; coop chat is off\n`);
    return 1;
  }
  const { principal } = gateway.route("terminal", TERMINAL_SENDER);
  process.stdout.write(`${banner}\nYou are ${principal.name} (trust ${principal.trust}).\n`);
  try {
    return await runTerminalChannel({
      handle: gateway.handle,
      sender: TERMINAL_SENDER,
      clear: (session) => gateway.clearSession("terminal", TERMINAL_SENDER, session),
      status: () => Promise.resolve(`${gateway.status("terminal", TERMINAL_SENDER)}\n${banner}`),
      input: process.stdin,
      output: process.stdout,
    });
  } finally {
    await gateway.drain();
    gateway.close();
  }
}
