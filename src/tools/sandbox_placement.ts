/**
 * Where a non-owner's command runs: the sandbox, after the escape self-test passed once, with the
 * policy built from their settings — or nowhere, with the reason (never on the host).
 * @module
 */
import { errorMessage } from "../errors/coop_error.ts";
import type { CoopConfig } from "../config/config.ts";
import { gatewaySockets } from "../config/gateway_sockets.ts";
import { type SandboxSettings, toSandboxPolicy } from "../config/sandbox_settings.ts";
import type { ExecOptions, SandboxPolicyInput } from "../sandbox/mod.ts";
import { exec as sandboxExec, selfTest } from "../sandbox/mod.ts";
import { join } from "node:path";
import { WORKSPACE_MOUNT } from "../sandbox/environment.ts";
import { isInside } from "../sandbox/path_containment.ts";
import {
  type ArgvRunner,
  type CommandOptions,
  type CommandResult,
  type CommandRunner,
  ToolError,
} from "./tool_contract.ts";
import { MAX_CAPTURE_BYTES } from "./truncation.ts";
import type { SessionKey, SessionSandboxes } from "./session_sandboxes.ts";

/** Runs a command in a sandbox; the real one is `exec` from the sandbox library. */
export type SandboxRunner = (
  policy: SandboxPolicyInput,
  argv: string[],
  options: ExecOptions,
) => Promise<CommandResult>;

/** The default gate: the built-in escape self-test must pass before any sandboxed command. */
export async function selfTestGate(): Promise<string | null> {
  const result = await selfTest();
  if (result.passed) return null;
  const escapes = result.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
  return `the sandbox self-test failed (${result.error ?? escapes.join("; ")}); ` +
    "run `coop sandbox test` for details";
}

/**
 * The policy a non-owner's command in `workspace` runs under: their merged settings, and never
 * a route to the gateway's own sockets (not even through an owner's IP-literal allowlist
 * entry). `coop explain` shows exactly this.
 */
export function sandboxPolicyFor(
  config: CoopConfig,
  settings: SandboxSettings,
  workspace: string,
): SandboxPolicyInput {
  return { ...toSandboxPolicy(settings, workspace), proxyNeverDial: gatewaySockets(config) };
}

/** Runs non-owner commands in the sandbox; one per executor (the self-test gate runs once). */
export class SandboxPlacement {
  readonly #config: CoopConfig;
  readonly #sandbox: SandboxRunner;
  readonly #gate: () => Promise<string | null>;
  #gateResult: Promise<string | null> | undefined;
  readonly #sessions: SessionSandboxes | undefined;

  /**
   * `sandbox` runs the command (default: the library's `exec`); `gate` may refuse them all;
   * `sessions` holds the live sandboxes of `lifetime = "session"` (without it, every command
   * gets a fresh sandbox).
   */
  constructor(
    config: CoopConfig,
    sandbox: SandboxRunner = (policy, argv, options) => sandboxExec(policy, argv, options),
    gate: () => Promise<string | null> = selfTestGate,
    sessions?: SessionSandboxes,
  ) {
    this.#config = config;
    this.#sandbox = sandbox;
    this.#gate = gate;
    this.#sessions = sessions;
  }

  /**
   * The command runner for one call in `workspace` under `settings`: `/bin/sh -c`;
   * `onCpuSeconds` receives each command's measured CPU time (`ExecResult.cpu`).
   */
  runner(
    workspace: string,
    settings: SandboxSettings,
    onCpuSeconds?: (seconds: number) => void,
    session?: SessionKey,
  ): CommandRunner {
    // An absolute shell: `sh` in the workspace's tool directories (first on PATH) must not
    // replace the shell that runs every `bash` command.
    return (command, options) =>
      this.#run(workspace, settings, ["/bin/sh", "-c", command], options, onCpuSeconds, session);
  }

  /** The program runner (`exec`) for one call in `workspace` under `settings`. */
  argvRunner(
    workspace: string,
    settings: SandboxSettings,
    onCpuSeconds?: (seconds: number) => void,
    session?: SessionKey,
  ): ArgvRunner {
    return (argv, options) => this.#run(workspace, settings, argv, options, onCpuSeconds, session);
  }

  async #run(
    workspace: string,
    settings: SandboxSettings,
    argv: readonly string[],
    { timeoutMs, signal, workingDir, env }: CommandOptions,
    onCpuSeconds?: (seconds: number) => void,
    session?: SessionKey,
  ): Promise<CommandResult> {
    // Coop's own files must never be inside what a sandbox can see; refuse rather than leak.
    for (const privatePath of [this.#config.file, this.#config.agent.stateDir]) {
      if (isInside(privatePath, workspace) || isInside(workspace, privatePath)) {
        throw new ToolError(
          "tool.private_path_visible",
          `refusing to run: ${privatePath} would be visible in the sandbox (${workspace})`,
        );
      }
    }
    const policy = sandboxPolicyFor(this.#config, settings, workspace);
    // Once per executor (i.e. at gateway start): a failed self-test refuses every sandboxed
    // command from then on — fail closed, never onto the host.
    this.#gateResult ??= this.#gate();
    const refusal = await this.#gateResult;
    if (refusal) throw new ToolError("tool.sandbox_unavailable", refusal);
    let result: CommandResult;
    const options = {
      timeoutMs,
      maxOutputBytes: MAX_CAPTURE_BYTES,
      signal,
      ...(workingDir ? { cwd: join(WORKSPACE_MOUNT, workingDir) } : {}),
      ...(env ? { env } : {}),
    };
    try {
      // `lifetime = "session"`: the chat session's live sandbox (session_sandboxes.ts).
      result = settings.lifetime === "session" && session && this.#sessions
        ? await this.#sessions.exec(session, policy, argv, {
          ...options,
          idleTimeoutMs: settings.idleTimeoutMs,
        })
        : await this.#sandbox(policy, [...argv], options);
    } catch (error) {
      const reason = errorMessage(error);
      throw new ToolError(
        "tool.sandbox_unavailable",
        `the sandbox could not start, so the command did not run: ${reason}`,
        { cause: error },
      );
    }
    if (result.cpu) onCpuSeconds?.((result.cpu.userMs + result.cpu.systemMs) / 1000);
    return result;
  }
}
