/**
 * The sandbox a configured person's `bash` tool gets, for `coop run` and `coop shell`: who the
 * person is (`--user`, else the terminal's user as `coop chat` routes it), whether their
 * commands run in a sandbox at all, and the policy — built by the executor's own functions
 * (`ToolExecutor.settingsFor`, `scopeFor`, `sandboxPolicyForUser` with their environment), as
 * `coop explain` shows it.
 * @module
 */
import { visiblePrivatePath } from "../config/private_paths.ts";
import type { CoopConfig, UserConfig } from "../config/config.ts";
import { WORKSPACE_DIR_MODE } from "../config/check_workspace_access.ts";
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import { routeUser } from "../gateway/router.ts";
import { personNamed, readPairedUsers, routeWithPaired } from "../gateway/paired_routing.ts";
import type { SandboxPolicyInput } from "../sandbox/mod.ts";
import { authorize, type Situation } from "../trust/authorization.ts";
import { scopeFor } from "../tools/path_scope.ts";
import { sandboxPolicyForUser, selfTestGate } from "../tools/sandbox_placement.ts";
import { loadEnvironment } from "../environments/environment_state.ts";
import { ToolExecutor } from "../tools/tool_executor.ts";
import { TERMINAL_SENDER } from "./chat_command.ts";
import type { EnvironmentSession } from "../environments/environment_mounts.ts";
import { endEnvironmentSession } from "../gateway/environment_sessions.ts";
import { newSessionId } from "../state/session_store.ts";

/** The channel of `coop run`'s and `coop shell`'s own throwaway sessions. */
const THROWAWAY_CHANNEL = "terminal";

/** Why a person's sandbox cannot be used (unknown user, the owner, commands not allowed…). */
export class UserSandboxError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "UserSandboxError";
  }
}

/** A person's sandbox, ready for `spawnSandboxed`. */
export interface UserSandbox {
  /** The person's name (`[[users]] name`). */
  user: string;
  /** The host directory mounted at /work (created when missing, like a tool call does). */
  workspace: string;
  /** Exactly the policy their `bash` tool's commands run under. */
  policy: SandboxPolicyInput;
  /** Their `bash` timeout (`[sandbox] timeout` or their override), in milliseconds. */
  timeoutMs: number;
  /** Their environment's `[agent] command`: what `coop run` starts when given no command. */
  agentCommand?: readonly string[];
  /**
   * Set when their environment keeps its upper layer per session and no `--session` was given:
   * this run's throwaway session, whose layer `endThrowawaySession` discards afterwards.
   */
  throwawaySession?: EnvironmentSession;
}

/** What to enter besides the person: a chat session's layer (`--session CHANNEL:ID`). */
export interface UserSandboxOptions {
  /** The chat session whose `upper = "session"` layer (and `COOP_SESSION`) the command gets. */
  session?: EnvironmentSession;
}

/** Discards the layer of `sandbox`'s throwaway session, if it has one (after the command ran). */
export async function endThrowawaySession(config: CoopConfig, sandbox: UserSandbox): Promise<void> {
  if (sandbox.throwawaySession) {
    await endEnvironmentSession(config, sandbox.user, sandbox.throwawaySession);
  }
}

/**
 * The person `name` (configured, else paired — as the gateway routes them), or the terminal's
 * user when `name` is undefined.
 */
function routeOf(config: CoopConfig, name: string | undefined) {
  const paired = readPairedUsers(config);
  if (name === undefined) {
    return routeWithPaired(config, { channel: "terminal", sender: TERMINAL_SENDER }, paired);
  }
  const user: UserConfig | undefined = personNamed(config, name, paired);
  if (!user) {
    const names = [...config.users, ...paired].map((u) => u.name).join(", ") || "none";
    throw new UserSandboxError(
      "run.unknown_user",
      `no [[users]] entry in ${config.file} nor paired person is named "${name}" ` +
        `(known: ${names})`,
    );
  }
  return routeUser(user);
}

/**
 * Resolves the sandbox of `name` (or of the terminal's user) under `config`. Refuses the
 * owner — whose commands run on the host, so there is no sandbox to enter — and anyone whose
 * trust allows no commands; runs the sandbox self-test gate the gateway runs before any
 * sandboxed command.
 *
 * @example
 * ```ts
 * const { policy } = await userSandbox(await loadConfig("coop.toml"), "bob");
 * ```
 */
export async function userSandbox(
  config: CoopConfig,
  name?: string,
  options: UserSandboxOptions = {},
): Promise<UserSandbox> {
  const route = routeOf(config, name);
  const principal = route.principal;
  const situation: Situation = {
    channel: "terminal",
    ceiling: null,
    contributors: [],
    sandboxEnabled: config.sandbox.enabled,
  };
  // The gate of coop run and coop shell: logged as authz.decision like every other.
  const bash = authorize(principal, situation, { kind: "tool", tool: "bash" });
  if (bash.allowed && bash.placement === "host") {
    throw new UserSandboxError(
      "run.owner_on_host",
      `"${principal.name}" has trust owner: the owner's commands run on the host, not in a ` +
        "sandbox, so there is none to enter. coop run and coop shell are for a sandboxed " +
        "person's environment: give --user NAME",
    );
  }
  if (!bash.allowed) {
    throw new UserSandboxError(
      "run.not_allowed",
      `${principal.name} (trust ${principal.trust}) may not run commands (rule ${bash.rule})` +
        (config.sandbox.enabled ? "" : `; [sandbox] enabled = false in ${config.file}`),
    );
  }
  const settings = new ToolExecutor(config, { env: {} }).settingsFor(route.user);
  const workspace = scopeFor(config, principal.name, false).hostRoot;
  // The same refusal as the executor's: Coop's own files never inside what a sandbox sees.
  const privatePath = visiblePrivatePath(config, workspace);
  if (privatePath) {
    throw new UserSandboxError(
      "run.private_path_visible",
      `refusing to run: ${privatePath} would be visible in the sandbox (${workspace})`,
    );
  }
  try {
    Deno.mkdirSync(workspace, { recursive: true, mode: WORKSPACE_DIR_MODE });
  } catch (error) {
    throw new UserSandboxError(
      "run.workspace",
      `cannot create ${principal.name}'s workspace ${workspace}: ${errorMessage(error)}`,
    );
  }
  const refusal = await selfTestGate();
  if (refusal) throw new UserSandboxError("run.sandbox_unavailable", refusal);
  // With their environment (overlay root, persist directories, [env]) exactly as their bash
  // tool's commands get it: the owner fixing Bob's environment fixes the one his agent uses.
  const coopfile = settings.environment === undefined
    ? undefined
    : loadEnvironment(config.agent.stateDir, settings.environment).coopfile;
  // With a layer per session, a command belongs to one: the chat's given, else its own, which
  // nothing else ever names and which is discarded once it is over.
  const throwawaySession = options.session === undefined && coopfile?.session.upper === "session"
    ? { channel: THROWAWAY_CHANNEL, id: `run-${newSessionId()}` }
    : undefined;
  const session = options.session ?? throwawaySession;
  const policy = sandboxPolicyForUser(config, {
    user: principal.name,
    settings,
    workspace,
    ...(session
      ? { session: { channel: session.channel, user: principal.name, session: session.id } }
      : {}),
  });
  const agentCommand = coopfile?.agent.command;
  return {
    user: principal.name,
    workspace,
    policy,
    timeoutMs: settings.timeoutMs,
    ...(agentCommand && agentCommand.length > 0 ? { agentCommand } : {}),
    ...(throwawaySession ? { throwawaySession } : {}),
  };
}
