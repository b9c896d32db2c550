/**
 * `coop run [--config FILE] [--user NAME] [--session CHANNEL:ID] [--timeout DURATION] [-- CMD
 * [ARG...]]` (without a command: the environment's `[agent] command`) and
 * `coop shell [--config FILE] [--user NAME] [--session CHANNEL:ID]`: a program inside exactly the sandbox that
 * person's `bash` tool gets (`userSandbox`). With stdin a terminal it runs on a pty of its own
 * (terminal_session.ts); otherwise on pipes with the command's exit status, for scripts.
 * @module
 */
import process from "node:process";
import { parseArgs } from "node:util";
import { type CoopConfig, loadConfig } from "../config/config.ts";
import { ConfigError, formatDiagnostic } from "../config/config_diagnostic.ts";
import {
  cgroupHostWithDelegation,
  environmentWritesSettled,
  SandboxError,
} from "../sandbox/mod.ts";
import { callerPath } from "./caller_path.ts";
import { DEFAULT_CONFIG_FILE } from "./check_command.ts";
import {
  EXIT_SANDBOX_FAILED,
  EXIT_TIMEOUT,
  parseTimeoutFlag,
  streamCommand,
} from "./sandbox_exec_command.ts";
import { writeStderr } from "./stderr.ts";
import { reportOutcome, runOnTerminal } from "./terminal_session.ts";
import { catchEndingSignals, EndedBeforeStart } from "./ending_signals.ts";
import { scanAfterRun } from "./run_scan.ts";
import { endThrowawaySession, type UserSandbox, userSandbox } from "./user_sandbox.ts";
import type { EnvironmentSession } from "../environments/environment_mounts.ts";
import { isSessionId } from "../state/session_store.ts";
import { CoopError } from "../errors/coop_error.ts";
import { UsageError } from "./usage_error.ts";

/**
 * `coop shell`'s program, decided inside the sandbox's own root: bash when it has one, else
 * sh — interactive, with a prompt naming the person (`$COOP_PROMPT_USER`).
 */
const SHELL_ARGV = [
  "/bin/sh",
  "-c",
  'if [ -x /bin/bash ]; then exec /bin/bash -i; else PS1="$COOP_PROMPT_USER@$(hostname):\\$ " exec /bin/sh -i; fi',
];

function parse(args: string[], command: "run" | "shell") {
  const { values, positionals } = parseArgs({
    args,
    options: {
      config: { type: "string" },
      user: { type: "string" },
      session: { type: "string" },
      ...(command === "run" ? { timeout: { type: "string" as const } } : {}),
    },
    allowPositionals: command === "run",
    strict: true,
  });
  return {
    values: values as { config?: string; user?: string; session?: string; timeout?: string },
    positionals,
  };
}

/** `--session CHANNEL:ID` (as `coop sandbox ps` lists sessions, e.g. `telegram:tg4242`). */
function parseSession(value: string | undefined): EnvironmentSession | undefined {
  if (value === undefined) return undefined;
  const colon = value.indexOf(":");
  const channel = value.slice(0, colon);
  const id = value.slice(colon + 1);
  if (colon < 1 || !/^[a-z][a-z0-9_-]*$/.test(channel) || !isSessionId(id)) {
    throw new UsageError(
      `--session "${value}": expected CHANNEL:ID, e.g. telegram:tg4242 or http:Zq3… (the ` +
        "channel, then the session id: 1-64 of A-Z a-z 0-9 _ -)",
    );
  }
  return { channel, id };
}

/** Loads the config and the person's sandbox; prints why not and returns null on failure. */
async function resolve(
  values: { config?: string; user?: string; session?: string },
): Promise<{ config: CoopConfig; sandbox: UserSandbox } | null> {
  const file = callerPath(values.config ?? DEFAULT_CONFIG_FILE);
  const session = parseSession(values.session);
  try {
    const config = await loadConfig(file);
    const sandbox = await userSandbox(config, values.user, session ? { session } : {});
    if (sandbox.throwawaySession) {
      writeStderr(
        `coop: ${sandbox.user}'s environment keeps its upper layer per chat session; this ` +
          "command gets a fresh layer of its own, discarded when it exits (--session " +
          "CHANNEL:ID enters a chat session's layer)\n",
      );
    }
    // As the gateway does at start: cgroup limits for an unprivileged invoker need a scope.
    await cgroupHostWithDelegation();
    return { config, sandbox };
  } catch (error) {
    if (error instanceof ConfigError) {
      for (const d of error.diagnostics) writeStderr(`coop: ${formatDiagnostic(file, d)}\n`);
      return null;
    }
    // UserSandboxError, an environment that cannot be used (not built, its Coopfile invalid), a
    // sandbox that cannot start: the reason, never a stack trace.
    if (error instanceof CoopError || error instanceof SandboxError) {
      writeStderr(`coop: ${error.message}\n`);
      return null;
    }
    throw error;
  }
}

/** The owner's TERM (so the program draws for the terminal it is on) and the prompt's name. */
function terminalEnv(user: string): Record<string, string> {
  const term = process.env.TERM;
  return {
    TERM: term && /^[\w.+-]{1,64}$/.test(term) ? term : "xterm-256color",
    COOP_PROMPT_USER: user,
    PS1: `${user}@\\h:\\w\\$ `,
  };
}

async function runIn(
  sandbox: UserSandbox,
  argv: string[],
  timeoutMs: number | undefined,
): Promise<number> {
  const started = Date.now();
  // From here an ending signal (Ctrl-C) ends the sandbox, never the scan below.
  const ending = catchEndingSignals();
  try {
    if (!Deno.stdin.isTerminal()) {
      const timeout = timeoutMs ?? sandbox.timeoutMs;
      return await streamCommand(sandbox.policy, argv, { timeoutMs: timeout, ending });
    }
    const outcome = await runOnTerminal(sandbox.policy, argv, {
      env: terminalEnv(sandbox.user),
      timeoutMs,
      ending,
    });
    reportOutcome(argv[0], outcome);
    if (outcome.timedOut) {
      writeStderr(`coop: timed out after ${timeoutMs} ms; the sandbox was killed\n`);
      return EXIT_TIMEOUT;
    }
    return outcome.exitCode;
  } catch (error) {
    if (error instanceof EndedBeforeStart) {
      writeStderr(`coop: ${error.message}\n`);
      return ending.exitCode(EXIT_SANDBOX_FAILED);
    }
    if (!(error instanceof SandboxError)) throw error;
    writeStderr(`coop: ${error.message}\n`);
    return EXIT_SANDBOX_FAILED;
  } finally {
    try {
      await environmentWritesSettled();
      // What the program left on the workspace, before the owner's git runs there.
      await scanAfterRun(sandbox, started);
    } finally {
      ending.release(); // whatever the after-work threw: listeners left would keep coop alive
    }
  }
}

/** `coop run`: returns the command's exit status (124 timeout, 125 not run, 2 usage). */
export async function runCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse(args, "run");
  const timeoutMs = values.timeout === undefined ? undefined : parseTimeoutFlag(values.timeout);
  const resolved = await resolve(values);
  if (!resolved) return EXIT_SANDBOX_FAILED;
  const { config, sandbox } = resolved;
  try {
    // No command: the agent CLI their environment's Coopfile names (`[agent] command`).
    const argv = positionals.length > 0 ? positionals : sandbox.agentCommand;
    if (!argv) {
      throw new UsageError(
        "run needs a command after -- (e.g. coop run --user bob -- ls /work), or an [agent] " +
          `command in ${sandbox.user}'s environment's Coopfile`,
      );
    }
    return await runIn(sandbox, [...argv], timeoutMs);
  } finally {
    await endThrowawaySession(config, sandbox);
  }
}

/** `coop shell`: an interactive shell in the person's sandbox; its exit status is coop's. */
export async function shellCommand(args: string[]): Promise<number> {
  const { values } = parse(args, "shell");
  const resolved = await resolve(values);
  if (!resolved) return EXIT_SANDBOX_FAILED;
  try {
    return await runIn(resolved.sandbox, SHELL_ARGV, undefined);
  } finally {
    await endThrowawaySession(resolved.config, resolved.sandbox);
  }
}
