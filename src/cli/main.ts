/**
 * The `coop` command. Run from a checkout as `./coop …` or `deno task coop …`.
 * @module
 */
import { chatCommand } from "./chat_command.ts";
import { checkCommand } from "./check_command.ts";
import { explainCommand } from "./explain_command.ts";
import { initCommand } from "./init_command.ts";
import { pairingCommand } from "./pairing_command.ts";
import { setupLogging } from "./logging.ts";
import { memoryCommand } from "./memory_command.ts";
import { sandboxCommand } from "./sandbox_command.ts";
import { runCommand, shellCommand } from "./run_command.ts";
import { setupCommand } from "./setup_command.ts";
import { startCommand } from "./start_command.ts";
import { USAGE } from "./usage.ts";
import { usageCommand } from "./usage_command.ts";
import { UsageError } from "./usage_error.ts";

async function run(args: string[]): Promise<number> {
  const [command, ...rest] = args;
  switch (command) {
    case "sandbox":
      return await sandboxCommand(rest);
    case "start":
      return await startCommand(rest);
    case "run":
      return await runCommand(rest);
    case "shell":
      return await shellCommand(rest);
    case "chat":
      return await chatCommand(rest);
    case "check":
      return await checkCommand(rest);
    case "pairing":
      return await pairingCommand(rest);
    case "memory":
      return await memoryCommand(rest);
    case "usage":
      return await usageCommand(rest);
    case "explain":
      return await explainCommand(rest);
    case "setup":
      return await setupCommand(rest);
    case "init":
    case "rebuild":
      return await initCommand(rest, command === "rebuild");
    case undefined:
    case "help":
    case "--help":
    case "-h":
      console.log(USAGE);
      return command === undefined ? 2 : 0;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

/** Runs the CLI and returns its exit status; user mistakes never print a stack trace. */
export async function main(args: string[]): Promise<number> {
  // A running gateway reports what it does (cron replies, requests); one-shot commands are quiet.
  await setupLogging(args[0] === "start" ? "info" : "warning");
  try {
    return await run(args);
  } catch (error) {
    // parseArgs reports unknown or malformed options as TypeError with ERR_PARSE_ARGS_* codes.
    const code = (error as { code?: string }).code ?? "";
    if (error instanceof UsageError || code.startsWith("ERR_PARSE_ARGS")) {
      console.error(`coop: ${(error as Error).message}\n\n${USAGE}`);
      return 2;
    }
    throw error;
  }
}

if (import.meta.main) Deno.exit(await main(Deno.args));
