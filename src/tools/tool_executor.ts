/**
 * `ToolExecutor`: authorizes a tool call, then runs it where `authorize()` placed it — on the
 * host (`host_placement.ts`), in the sandbox (`sandbox_placement.ts`) or in the gateway
 * (`gateway_placement.ts`).
 * @module
 */
import { errorMessage } from "../errors/coop_error.ts";
import type { CoopConfig, CronJobConfig, UserConfig } from "../config/config.ts";
import { WORKSPACE_DIR_MODE } from "../config/check_workspace_access.ts";
import { mergeSandboxSettings, type SandboxSettings } from "../config/sandbox_settings.ts";
import type { MemoryDatabase, MemoryHit } from "../state/memory_store.ts";
import {
  authorize,
  decide,
  type Decision,
  type Principal,
  type Situation,
} from "../trust/authorization.ts";
import { GATEWAY_TOOL_NAMES, isToolName, TOOL_NAMES, type ToolName } from "../trust/tool_names.ts";
import { visiblePrivatePath } from "../config/private_paths.ts";
import { type FileWriters, fileWriters, type Person } from "./file_provenance.ts";
import { readPairedPeople } from "../state/paired_people_reader.ts";
import type { AutoexecFile, GitNeutralised } from "../workspace/scan_context.ts";
import { WorkspaceGuard } from "../workspace/workspace_guard.ts";
import { callInGateway } from "./gateway_placement.ts";
import { HostPlacement } from "./host_placement.ts";
import type { HostArgvRunner, HostRunner } from "./host_runner.ts";
import { scopeFor } from "./path_scope.ts";
import { SandboxPlacement, type SandboxRunner, type UserSandbox } from "./sandbox_placement.ts";
import type { SessionKey, SessionSandboxes } from "./session_sandboxes.ts";
import { runTool, type Tool, type ToolContext, type ToolResult } from "./tool_contract.ts";
import { BUILTIN_TOOLS } from "./tool_registry.ts";
import { DEFAULT_MAX_OUTPUT_CHARS } from "./truncation.ts";

/** What the executor may be given instead of the real host and sandbox (tests use fakes). */
export interface ExecutorDependencies {
  /** Runs non-owner commands. Default: the sandbox library's `exec`. */
  sandbox?: SandboxRunner;
  /** Runs owner commands. Default: `sh -c` via `Deno.Command`. */
  host?: HostRunner;
  /** Runs owner programs (`exec`). Default: `Deno.Command`, no shell. */
  hostArgv?: HostArgvRunner;
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
  /** Live sandboxes of `lifetime = "session"` (without it, each command gets a fresh one). */
  sessionSandboxes?: SessionSandboxes;
  /**
   * The workspace scans (default: the executor's own); the gateway shares one across config
   * reloads so that a session workspace's scans keep chaining (workspace_guard.ts).
   */
  workspaceGuard?: WorkspaceGuard;
  /** The paired people (default: read from the state database when needed). */
  pairedPeople?: () => readonly Person[];
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
  /**
   * In a group turn: the group's directory under the workspace (`group-family`), which every
   * member's tools see instead of their own. Such a call never runs on the host.
   */
  groupDir?: string;
  /** The tool name the model asked for. */
  tool: string;
  /** The model's arguments, not yet validated. */
  args: unknown;
  /** Aborted when the turn is cancelled: a running command is killed. */
  signal?: AbortSignal;
  /** Receives the measured CPU seconds of each sandboxed command the call ran (budgets). */
  onSandboxSeconds?: (seconds: number) => void;
  /** Whether the sandbox-seconds budget those seconds go to is spent (a live session ends). */
  sandboxBudgetSpent?: () => boolean;
  /**
   * The chat session the call belongs to: its live sandbox with `lifetime = "session"`, an
   * environment's `COOP_SESSION` and session uppers.
   */
  session?: SessionKey;
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
   * Whose writing a file the owner's `read_file` returned is (a sandboxed person's directory, the
   * shared or a group's): they become contributors of the turn (`TurnTaint.readFile`, P14).
   */
  readFrom?: FileWriters;
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
const WRITING_TOOLS: readonly string[] = ["bash", "exec", "write_file", "edit_file"];

/**
 * The tools offered to `principal` in `situation`: those `authorize()` allows, less the memory
 * tools when there are no memory stores. `ToolExecutor.toolsFor` and `coop explain` both ask it.
 */
export function offeredToolNames(
  principal: Principal,
  situation: Situation,
  memoryConfigured: boolean,
): ToolName[] {
  return TOOL_NAMES
    .filter((name) => memoryConfigured || !GATEWAY_TOOL_NAMES.includes(name))
    .filter((name) => decide(principal, situation, { kind: "tool", tool: name }).allowed);
}

/**
 * Authorizes each tool call, then runs it where `authorize()` placed it: the owner's commands on
 * the host, everyone else's in the sandbox, the memory tools in the gateway. Never falls back to
 * the host.
 */
export class ToolExecutor {
  readonly #config: CoopConfig;
  /** Scans after non-owner calls that can write (F23, F27, R12). */
  readonly #guard: WorkspaceGuard;
  readonly #host: HostPlacement;
  readonly #sandbox: SandboxPlacement;
  readonly #maxOutputChars: number;
  readonly #memory: MemoryDatabase | undefined;
  readonly #pairedPeople: () => readonly Person[];

  /** `deps` replaces the real host, sandbox, gate and environment (tests use fakes). */
  constructor(config: CoopConfig, deps: ExecutorDependencies = {}) {
    this.#config = config;
    this.#guard = deps.workspaceGuard ?? new WorkspaceGuard();
    this.#host = new HostPlacement(
      config,
      deps.env ?? Deno.env.toObject(),
      deps.host,
      deps.hostArgv,
    );
    this.#sandbox = new SandboxPlacement(
      config,
      deps.sandbox,
      deps.sandboxGate ?? (deps.sandbox ? () => Promise.resolve(null) : undefined),
      deps.sessionSandboxes,
    );
    this.#maxOutputChars = deps.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
    this.#memory = deps.memory;
    this.#pairedPeople = deps.pairedPeople ?? (() => {
      const people = readPairedPeople(config.agent.stateDir);
      // Unreadable: a paired person's directory is then not told from the owner's own.
      return "problem" in people ? [] : people;
    });
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
    return offeredToolNames(principal, full, this.#memory !== undefined)
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
    const decision = authorize(call.principal, situation, { kind: "tool", tool: call.tool });
    if (!decision.allowed) {
      return {
        isError: true,
        content: `${call.tool} is not permitted at trust "${decision.effectiveTrust}" ` +
          `(rule ${decision.rule})`,
        decision,
      };
    }
    const settings = this.settingsFor(call.user, call.cronJob);
    if (GATEWAY_TOOL_NAMES.includes(call.tool)) {
      const outcome = await callInGateway(call, situation, {
        memory: this.#memory,
        settings,
        maxOutputChars: this.#maxOutputChars,
      });
      return { ...outcome, decision };
    }
    const onHost = decision.placement === "host";
    if (onHost && call.groupDir !== undefined) {
      // The router caps a group's ceiling below owner; should that ever fail, fail closed.
      return {
        isError: true,
        content: `${call.tool} refused: a group turn never runs on the host`,
        decision,
      };
    }
    const scope = scopeFor(this.#config, call.principal.name, onHost, call.groupDir);
    // Coop's own files are out of every non-owner's reach, the file tools' too (they run here).
    const privatePath = onHost ? null : visiblePrivatePath(this.#config, scope.hostRoot);
    if (privatePath) {
      return {
        isError: true,
        content: `${call.tool} refused: ${privatePath} (Coop's own) would be within reach in ` +
          `${scope.visibleRoot}; the owner moves it out of the workspace`,
        decision,
      };
    }
    // What the sandbox mounts read-only, the file tools (which run here, on the host) must not
    // write either.
    if (!onHost) scope.protectedNames = settings.protectedNames;
    // And what the sandbox's quotas bound, they must not push past: the same person's quotas
    // (the owner's tools run on the host, unbounded, as their commands do).
    if (!onHost && (settings.diskQuotaBytes !== undefined || settings.inodeQuota !== undefined)) {
      scope.quota = {
        diskQuotaBytes: settings.diskQuotaBytes,
        inodeQuota: settings.inodeQuota,
        scanLimit: settings.scanLimit,
      };
    }
    try {
      // Only the gateway's user may enter what it creates; an existing directory keeps its
      // mode (coop check and coop start warn when it lets other local users in). Synchronous:
      // a few microseconds, where the asynchronous call's thread-pool round trip cost ~0.1 ms
      // (more on a busy machine).
      Deno.mkdirSync(scope.hostRoot, { recursive: true, mode: WORKSPACE_DIR_MODE });
    } catch (error) {
      const message = errorMessage(error);
      return {
        isError: true,
        content: `cannot create workspace ${scope.hostRoot}: ${message}`,
        decision,
      };
    }
    // A live session sandbox (`lifetime = "session"`) keeps background processes between
    // calls: its workspace's scans chain, and one more runs when it ends.
    const inSession = !onHost && settings.lifetime === "session" && call.session !== undefined;
    const userSandbox = (): UserSandbox => ({
      user: call.principal.name,
      settings,
      workspace: scope.hostRoot,
      ...(call.session ? { session: call.session } : {}),
      ...(inSession
        ? {
          afterSessionEnd: ({ startedAt }: { startedAt: number }) =>
            this.#guard.afterCall(call.principal.name, scope.hostRoot, startedAt, {
              maxEntries: settings.scanLimit,
              session: true,
            }),
          ...(call.sandboxBudgetSpent ? { budgetSpent: call.sandboxBudgetSpent } : {}),
        }
        : {}),
    });
    const context: ToolContext = {
      scope,
      defaultTimeoutMs: settings.timeoutMs,
      maxTimeoutMs: settings.maxTimeoutMs,
      maxOutputChars: this.#maxOutputChars,
      signal: call.signal,
      runCommand: call.tool === "bash"
        ? (onHost
          ? this.#host.runner(scope.hostRoot)
          : this.#sandbox.runner(userSandbox(), call.onSandboxSeconds))
        : undefined,
      runArgv: call.tool === "exec"
        ? (onHost
          ? this.#host.argvRunner(scope.hostRoot)
          : this.#sandbox.argvRunner(userSandbox(), call.onSandboxSeconds))
        : undefined,
      maxSendFileBytes: this.#config.agent.maxSendFileBytes,
    };
    const started = Date.now();
    const result = await runTool(BUILTIN_TOOLS[call.tool], call.args, context);
    if (onHost && call.tool === "read_file" && !result.isError) {
      const path = (call.args as { path?: unknown } | null)?.path;
      const writers = typeof path === "string"
        ? fileWriters(this.#config, path, () => this.#pairedPeople())
        : null;
      return { ...result, decision, ...(writers ? { readFrom: writers } : {}) };
    }
    if (onHost || !WRITING_TOOLS.includes(call.tool)) return { ...result, decision };
    const found = await this.#guard.afterCall(call.principal.name, scope.hostRoot, started, {
      maxEntries: settings.scanLimit,
      session: inSession,
    });
    return {
      ...result,
      ...(found.note ? { content: `${result.content}\n${found.note}` } : {}),
      decision,
      ...(found.autoexec.length ? { autoexec: found.autoexec } : {}),
      ...(found.gitNeutralised.length ? { gitNeutralised: found.gitNeutralised } : {}),
      ...(found.unverified.length ? { workspaceUnverified: found.unverified } : {}),
    };
  }
}
