/**
 * Where a non-owner's command runs: the sandbox, after the escape self-test passed once, with the
 * policy built from their settings — or nowhere, with the reason (never on the host).
 * @module
 */
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import type { CoopConfig } from "../config/config.ts";
import { gatewaySockets } from "../config/gateway_sockets.ts";
import { configSecrets } from "../config/channel_secrets.ts";
import { visiblePrivatePath } from "../config/private_paths.ts";
import { type SandboxSettings, toSandboxPolicy } from "../config/sandbox_settings.ts";
import type { ExecOptions, SandboxPolicyInput } from "../sandbox/mod.ts";
import { exec as sandboxExec, selfTest } from "../sandbox/mod.ts";
import { join } from "node:path";
import { WORKSPACE_MOUNT } from "../sandbox/environment.ts";
import {
  type ArgvRunner,
  type CommandOptions,
  type CommandResult,
  type CommandRunner,
  ToolError,
} from "./tool_contract.ts";
import { MAX_CAPTURE_BYTES } from "./truncation.ts";
import { type SessionKey, type SessionSandboxes, upperOf } from "./session_sandboxes.ts";
import { SerialQueue } from "../sandbox/serial_queue.ts";
import { abortableWait } from "../sandbox/abortable_wait.ts";
import { loadEnvironment } from "../environments/environment_state.ts";
import { environmentMounts } from "../environments/environment_mounts.ts";
import { warnIfStale, withEnvironment } from "./environment_policy.ts";

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
 * entry). Without the user's environment; `sandboxPolicyForUser` adds it.
 */
export function sandboxPolicyFor(
  config: CoopConfig,
  settings: SandboxSettings,
  workspace: string,
): SandboxPolicyInput {
  refuseSecretPassthrough(config, settings);
  return { ...toSandboxPolicy(settings, workspace), proxyNeverDial: gatewaySockets(config) };
}

/**
 * Secrets never enter a sandbox. `coop check` refuses a config whose `env_passthrough` names
 * one, but only where it runs (gateway start, reload): `coop run` and `coop shell` load the
 * config without it. Every sandbox policy is built here, so the rule holds on every path.
 */
function refuseSecretPassthrough(config: CoopConfig, settings: SandboxSettings): void {
  const secrets = new Map(configSecrets(config));
  const named = settings.envPassthrough.filter((name) => secrets.has(name));
  if (named.length === 0) return;
  throw new CoopError(
    "sandbox.secret_passthrough",
    `env_passthrough names ${
      named.map((name) => `${name} (${secrets.get(name)})`).join(", ")
    }: secrets never enter a sandbox; remove ${
      named.length === 1 ? "it" : "them"
    } from env_passthrough in ${config.file} (\`coop check\` names the key)`,
  );
}

/** Whose sandbox `sandboxPolicyForUser` builds. */
export interface UserSandbox {
  /** The user (principal) name: their upper layer and persist directories are theirs. */
  user: string;
  /** Their merged settings (`ToolExecutor.settingsFor`). */
  settings: SandboxSettings;
  /** The host directory mounted at `/work`. */
  workspace: string;
  /**
   * The chat session the command belongs to: its live sandbox (`lifetime = "session"`),
   * `COOP_SESSION` and `upper = "session"`.
   */
  session?: SessionKey;
  /** With a live session sandbox: runs once it has ended (the workspace's last scan). */
  afterSessionEnd?: (session: { startedAt: number }) => Promise<unknown>;
  /** With a live session sandbox: whether the budget its CPU goes to is spent (it is stopped). */
  budgetSpent?: () => boolean;
}

/**
 * THE policy of a user's sandboxed command — every tool call, `coop run` and `coop shell` use
 * it: `sandboxPolicyFor` plus, when the user's settings name an environment, its overlay root,
 * persist binds and variables. The owner's sandboxed commands (a tainted turn) get no
 * environment. Throws `EnvironmentError` when the environment cannot be used (fail closed:
 * the command does not run without it).
 */
export function sandboxPolicyForUser(config: CoopConfig, sandbox: UserSandbox): SandboxPolicyInput {
  const policy = sandboxPolicyFor(config, sandbox.settings, sandbox.workspace);
  const coopfilePath = sandbox.settings.environment;
  const owner = config.users.some((u) => u.name === sandbox.user && u.trust === "owner");
  if (coopfilePath === undefined || owner) return policy;
  const environment = loadEnvironment(config.agent.stateDir, coopfilePath);
  warnIfStale(environment);
  const session = sandbox.session &&
    { channel: sandbox.session.channel, id: sandbox.session.session };
  const mounts = environmentMounts(environment, sandbox.user, session, config.file);
  return withEnvironment(policy, mounts);
}

/**
 * The `ToolError` of a command cancelled before its sandbox started it — `error` is then the
 * signal's reason, thrown by a wait on the way (another sandbox's upper layer, say) — else null.
 */
function cancelledBeforeStart(error: unknown, signal: AbortSignal | undefined): ToolError | null {
  if (!signal?.aborted || error !== signal.reason) return null;
  return new ToolError(
    "tool.cancelled",
    `cancelled before it started, so the command did not run (${errorMessage(error)})`,
    { cause: error },
  );
}

/** Runs non-owner commands in the sandbox; one per executor (the self-test gate runs once). */
export class SandboxPlacement {
  readonly #config: CoopConfig;
  readonly #sandbox: SandboxRunner;
  readonly #gate: () => Promise<string | null>;
  #gateResult: Promise<string | null> | undefined;
  readonly #sessions: SessionSandboxes | undefined;
  readonly #uppers = new SerialQueue();

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
   * The command runner for one call in `sandbox` (its user, settings, workspace, session):
   * `/bin/sh -c`; `onCpuSeconds` receives each command's measured CPU time (`ExecResult.cpu`).
   */
  runner(sandbox: UserSandbox, onCpuSeconds?: (seconds: number) => void): CommandRunner {
    // An absolute shell: `sh` in the workspace's tool directories (first on PATH) must not
    // replace the shell that runs every `bash` command.
    return (command, options) =>
      this.#run(sandbox, ["/bin/sh", "-c", command], options, onCpuSeconds);
  }

  /** The program runner (`exec`) for one call in `sandbox`. */
  argvRunner(sandbox: UserSandbox, onCpuSeconds?: (seconds: number) => void): ArgvRunner {
    return (argv, options) => this.#run(sandbox, argv, options, onCpuSeconds);
  }

  async #run(
    sandbox: UserSandbox,
    argv: readonly string[],
    { timeoutMs, signal, workingDir, env }: CommandOptions,
    onCpuSeconds?: (seconds: number) => void,
  ): Promise<CommandResult> {
    const { workspace, settings, session } = sandbox;
    // Coop's own files must never be inside what a sandbox can see; refuse rather than leak.
    const privatePath = visiblePrivatePath(this.#config, workspace);
    if (privatePath) {
      throw new ToolError(
        "tool.private_path_visible",
        `refusing to run: ${privatePath} would be visible in the sandbox (${workspace})`,
      );
    }
    let policy: SandboxPolicyInput;
    try {
      policy = sandboxPolicyForUser(this.#config, sandbox);
    } catch (error) {
      // An environment that cannot be used (invalid Coopfile, base not built): the command
      // does not run at all, and the message says what the owner does about it.
      if (!(error instanceof CoopError)) throw error;
      throw new ToolError(error.code, `the command did not run: ${error.message}`, {
        cause: error,
      });
    }
    // Once per executor (i.e. at gateway start): a failed self-test refuses every sandboxed
    // command from then on — fail closed, never onto the host.
    this.#gateResult ??= this.#gate();
    let refusal: string | null;
    try {
      refusal = await abortableWait(this.#gateResult, signal);
    } catch (error) {
      throw cancelledBeforeStart(error, signal) ?? error;
    }
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
          // What its background processes use is charged as it runs (where a cgroup counts it)
          // or when it ends, and scanned when it ends; a budget that spends stops it.
          onCpuSeconds,
          afterEnd: sandbox.afterSessionEnd,
          budgetSpent: sandbox.budgetSpent,
        })
        // One sandbox at a time on an upper layer: overlayfs gives undefined results when one
        // upper directory is mounted twice at once (a person's concurrent turns wait here, and
        // leave at once when cancelled).
        : await this.#uppers.after(
          upperOf(policy),
          () => this.#sandbox(policy, [...argv], options),
          signal,
        );
    } catch (error) {
      throw cancelledBeforeStart(error, signal) ?? new ToolError(
        "tool.sandbox_unavailable",
        `the sandbox could not start, so the command did not run: ${errorMessage(error)}`,
        { cause: error },
      );
    }
    if (result.cpu) onCpuSeconds?.((result.cpu.userMs + result.cpu.systemMs) / 1000);
    return result;
  }
}
