/**
 * `SandboxExecutor`: authorizes a tool call, then runs it on the host (owner) or in the sandbox.
 * @module
 */
import { errorMessage } from "../core/errors.ts";
import type {
  CommandResult,
  CommandRunner,
  Tool,
  ToolContext,
  ToolResult,
} from "../core/tool_contract.ts";
import { runTool, ToolError } from "../core/tool_contract.ts";
import { BUILTIN_TOOLS } from "../core/tool_registry.ts";
import { GATEWAY_TOOL_NAMES, isToolName, TOOL_NAMES, type ToolName } from "../core/tool_names.ts";
import { DEFAULT_MAX_OUTPUT_CHARS } from "../core/truncation.ts";
import type { ExecOptions, SandboxPolicyInput } from "../sandbox/mod.ts";
import { exec as sandboxExec, selfTest } from "../sandbox/mod.ts";
import { isInside } from "../sandbox/path_containment.ts";
import {
  authorize,
  decide,
  type Decision,
  type Principal,
  type Situation,
} from "./authorization.ts";
import type { CoopConfig, CronJobConfig, UserConfig } from "./config.ts";
import { channelSecrets } from "./channel_secrets.ts";
import type { AutoexecFile, GitNeutralised } from "./scan_context.ts";
import { gatewaySockets } from "./gateway_sockets.ts";
import { type HostRunner, runOnHost } from "./host_runner.ts";
import { gatedMemory } from "./memory_access.ts";
import type { MemoryDatabase, MemoryHit } from "./memory_store.ts";
import { mergeSandboxSettings, type SandboxSettings, toSandboxPolicy } from "./sandbox_settings.ts";
import { scopeFor } from "../core/path_scope.ts";
import { WORKSPACE_DIR_MODE } from "./workspace_access_check.ts";
import { WorkspaceGuard } from "./workspace_guard.ts";

/** Runs a command in a sandbox; the real one is `exec` from the sandbox library. */
export type SandboxRunner = (
  policy: SandboxPolicyInput,
  argv: string[],
  options: ExecOptions,
) => Promise<CommandResult>;

/** What the executor may be given instead of the real host and sandbox (tests use fakes). */
export interface ExecutorDependencies {
  /** Runs non-owner commands. Default: the sandbox library's `exec`. */
  sandbox?: SandboxRunner;
  /** Runs owner commands. Default: `sh -c` via `Deno.Command`. */
  host?: HostRunner;
  /** The gateway's environment (default `Deno.env.toObject()`); secrets are removed from it. */
  env?: Record<string, string>;
  /** Cap on what one tool returns to the model. */
  maxOutputChars?: number;
  /**
   * Gate before the first sandboxed command: resolves to a failure reason, or null when the
   * sandbox may be used. Default: the escape self-test (`coop sandbox test`) when the real
   * sandbox is used, nothing when a fake `sandbox` is injected.
   */
  sandboxGate?: () => Promise<string | null>;
  /** The memory stores; without them the memory tools are not offered. */
  memory?: MemoryDatabase;
}

/** The default gate: the built-in escape self-test must pass before any sandboxed command. */
export async function selfTestGate(): Promise<string | null> {
  const result = await selfTest();
  if (result.passed) return null;
  const escapes = result.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
  return `the sandbox self-test failed (${result.error ?? escapes.join("; ")}); ` +
    "run `coop sandbox test` for details";
}

/** One tool call from the agent loop, with everything needed to authorize it. */
export interface ToolCall {
  /** Who the turn belongs to. */
  principal: Principal;
  /** The turn's channel, ceiling and contributors (`sandboxEnabled` is taken from config). */
  situation: Omit<Situation, "sandboxEnabled">;
  /** The configured user, when the principal is one (for sandbox overrides). */
  user?: UserConfig;
  /** The cron job, when the turn comes from one (its overrides apply over the user's). */
  cronJob?: CronJobConfig;
  /** The tool name the model asked for. */
  tool: string;
  /** The model's arguments, not yet validated. */
  args: unknown;
  /** Aborted when the turn is cancelled: a running command is killed. */
  signal?: AbortSignal;
}

/** A tool result plus the authorization decision behind it. */
export interface ToolCallOutcome extends ToolResult {
  /** The decision, or null when the tool name was unknown. */
  decision: Decision | null;
  /**
   * Files that tools on the host would run by themselves (git hooks and program-running config,
   * `.envrc`, VS Code tasks) that a non-owner's call wrote; each is also logged as
   * `workspace.autoexec_written` for the owner (ATTACKS F23). Absent when there are none.
   */
  autoexec?: AutoexecFile[];
  /**
   * Every memory the call read, as the store returned it (its text went to the model). The turn
   * takes each one's trust as a contributor (`TurnTaint.read`, ATTACKS P14). Absent when none.
   */
  memoryRead?: MemoryHit[];
  /**
   * What git would have obeyed on the host that the call left — program-running config, hooks,
   * pointers outside the workspace — and Coop disabled; each is also logged as
   * `workspace.git_neutralised` (ATTACKS F27), and the tool result says so. Absent when none.
   */
  gitNeutralised?: GitNeutralised[];
  /**
   * Why the workspace could not be fully checked after the call (too many entries,
   * unreadable directories); logged as `workspace.scan_incomplete` (ATTACKS R12).
   */
  workspaceUnverified?: string[];
}

/** Tools through which a non-owner writes files in their workspace. */
const WRITING_TOOLS: readonly string[] = ["bash", "write_file", "edit_file"];

const MAX_CAPTURE_BYTES = 1 << 20;

/** Executes tool calls with the placement `authorize()` chose; never falls back to the host. */
export class SandboxExecutor {
  readonly #config: CoopConfig;
  /** Scans after non-owner calls that can write (F23, F27, R12). */
  readonly #guard = new WorkspaceGuard();
  readonly #sandbox: SandboxRunner;
  readonly #host: HostRunner;
  readonly #hostEnv: Record<string, string>;
  readonly #maxOutputChars: number;
  readonly #gate: () => Promise<string | null>;
  readonly #memory: MemoryDatabase | undefined;
  #gateResult: Promise<string | null> | undefined;

  constructor(config: CoopConfig, deps: ExecutorDependencies = {}) {
    this.#config = config;
    this.#sandbox = deps.sandbox ?? ((policy, argv, options) => sandboxExec(policy, argv, options));
    this.#host = deps.host ?? runOnHost;
    this.#gate = deps.sandboxGate ?? (deps.sandbox ? () => Promise.resolve(null) : selfTestGate);
    this.#maxOutputChars = deps.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
    this.#memory = deps.memory;
    // Provider keys and channel tokens stay in the gateway, even for the owner's shell.
    const secrets = new Set<string>();
    for (const p of config.providers) if (p.api_key_env) secrets.add(p.api_key_env);
    for (const [name] of channelSecrets(config)) secrets.add(name);
    const env = deps.env ?? Deno.env.toObject();
    this.#hostEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !secrets.has(k)));
  }

  /** Returns the sandbox settings for a user and optional cron job: global, user, job. */
  settingsFor(user?: UserConfig, cronJob?: CronJobConfig): SandboxSettings {
    return mergeSandboxSettings(
      this.#config.sandbox.defaults,
      user?.sandbox ?? {},
      cronJob?.sandbox ?? {},
    );
  }

  /** Whether non-owner commands may run at all (`[sandbox] enabled`). */
  get sandboxEnabled(): boolean {
    return this.#config.sandbox.enabled;
  }

  /** Returns the tools to offer the model for this principal and situation (no log lines). */
  toolsFor(principal: Principal, situation: Omit<Situation, "sandboxEnabled">): Tool[] {
    const full: Situation = { ...situation, sandboxEnabled: this.#config.sandbox.enabled };
    return TOOL_NAMES
      .filter((name) => this.#memory !== undefined || !GATEWAY_TOOL_NAMES.includes(name))
      .filter((name) => decide(principal, full, { kind: "tool", tool: name }).allowed)
      .map((name) => BUILTIN_TOOLS[name]);
  }

  /** Authorizes and runs one tool call; every failure comes back as an error result. */
  async call(call: ToolCall): Promise<ToolCallOutcome> {
    if (!isToolName(call.tool)) {
      return { isError: true, content: `unknown tool "${call.tool}"`, decision: null };
    }
    const situation: Situation = {
      ...call.situation,
      sandboxEnabled: this.#config.sandbox.enabled,
    };
    if (GATEWAY_TOOL_NAMES.includes(call.tool)) return this.#callInGateway(call, situation);
    const decision = authorize(call.principal, situation, { kind: "tool", tool: call.tool });
    if (!decision.allowed) {
      return {
        isError: true,
        content: `${call.tool} is not permitted at trust "${decision.effectiveTrust}" ` +
          `(rule ${decision.rule})`,
        decision,
      };
    }
    const onHost = decision.placement === "host";
    const settings = this.settingsFor(call.user, call.cronJob);
    const scope = scopeFor(this.#config, call.principal.name, onHost);
    // What the sandbox mounts read-only, the file tools (which run here, on the host) must not
    // write either.
    if (!onHost) scope.protectedNames = settings.protectedNames;
    try {
      // Only the gateway's user may enter what it creates; an existing directory keeps its
      // mode (coop check and coop start warn when it lets other local users in).
      await Deno.mkdir(scope.hostRoot, { recursive: true, mode: WORKSPACE_DIR_MODE });
    } catch (error) {
      const message = errorMessage(error);
      return {
        isError: true,
        content: `cannot create workspace ${scope.hostRoot}: ${message}`,
        decision,
      };
    }
    const context: ToolContext = {
      scope,
      defaultTimeoutMs: settings.timeoutMs,
      maxTimeoutMs: settings.maxTimeoutMs,
      maxOutputChars: this.#maxOutputChars,
      signal: call.signal,
      runCommand: call.tool === "bash"
        ? (onHost
          ? this.#hostRunner(scope.hostRoot)
          : this.#sandboxRunner(scope.hostRoot, settings))
        : undefined,
    };
    const started = Date.now();
    const result = await runTool(BUILTIN_TOOLS[call.tool], call.args, context);
    if (onHost || !WRITING_TOOLS.includes(call.tool)) return { ...result, decision };
    const found = await this.#guard.afterCall(
      call.principal.name,
      scope.hostRoot,
      started,
      settings.scanLimit,
    );
    return {
      ...result,
      ...(found.note ? { content: `${result.content}\n${found.note}` } : {}),
      decision,
      ...(found.autoexec.length ? { autoexec: found.autoexec } : {}),
      ...(found.gitNeutralised.length ? { gitNeutralised: found.gitNeutralised } : {}),
      ...(found.unverified.length ? { workspaceUnverified: found.unverified } : {}),
    };
  }

  /** Memory tools: authorized like any tool, then per store, and run here, never sandboxed. */
  async #callInGateway(call: ToolCall, situation: Situation): Promise<ToolCallOutcome> {
    const tool = call.tool as ToolName;
    const decision = authorize(call.principal, situation, { kind: "tool", tool });
    if (!decision.allowed) {
      return {
        isError: true,
        content: `${tool} is not permitted at trust "${decision.effectiveTrust}" ` +
          `(rule ${decision.rule})`,
        decision,
      };
    }
    const settings = this.settingsFor(call.user, call.cronJob);
    const read: MemoryHit[] = [];
    const context: ToolContext = {
      // Memory tools touch no files; an empty scope keeps the contract without granting any.
      scope: { hostRoot: "/nonexistent", visibleRoot: "/nonexistent" },
      memory: this.#memory &&
        gatedMemory(this.#memory, call.principal, situation, (hits) => read.push(...hits)),
      defaultTimeoutMs: settings.timeoutMs,
      maxTimeoutMs: settings.maxTimeoutMs,
      maxOutputChars: this.#maxOutputChars,
    };
    const result = await runTool(BUILTIN_TOOLS[tool], call.args, context);
    return read.length ? { ...result, decision, memoryRead: read } : { ...result, decision };
  }

  #hostRunner(cwd: string): CommandRunner {
    return (command, { timeoutMs, signal }) =>
      this.#host(command, {
        cwd,
        timeoutMs,
        env: this.#hostEnv,
        maxOutputBytes: MAX_CAPTURE_BYTES,
        signal,
      });
  }

  #sandboxRunner(workspace: string, settings: SandboxSettings): CommandRunner {
    return async (command, { timeoutMs, signal }) => {
      // Coop's own files must never be inside what a sandbox can see; refuse rather than leak.
      for (const privatePath of [this.#config.file, this.#config.agent.stateDir]) {
        if (isInside(privatePath, workspace) || isInside(workspace, privatePath)) {
          throw new ToolError(
            "tool.private_path_visible",
            `refusing to run: ${privatePath} would be visible in the sandbox (${workspace})`,
          );
        }
      }
      // Not even an owner's IP-literal allowlist entry lets a sandbox reach the gateway itself.
      const policy = {
        ...toSandboxPolicy(settings, workspace),
        proxyNeverDial: gatewaySockets(this.#config),
      };
      // Once per executor (i.e. at gateway start): a failed self-test refuses every sandboxed
      // command from then on — fail closed, never onto the host.
      this.#gateResult ??= this.#gate();
      const refusal = await this.#gateResult;
      if (refusal) throw new ToolError("tool.sandbox_unavailable", refusal);
      try {
        return await this.#sandbox(policy, ["sh", "-c", command], {
          timeoutMs,
          maxOutputBytes: MAX_CAPTURE_BYTES,
          signal,
        });
      } catch (error) {
        const reason = errorMessage(error);
        throw new ToolError(
          "tool.sandbox_unavailable",
          `the sandbox could not start, so the command did not run: ${reason}`,
          { cause: error },
        );
      }
    };
  }
}
