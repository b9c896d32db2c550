/**
 * The sandbox part of `coop explain`: where a principal's commands and file tools would run,
 * and — for a sandboxed principal — the policy the sandbox would get, built by the same code a
 * tool call uses (`ToolExecutor.settingsFor`, `sandboxPolicyForUser`: their environment included),
 * with the enforcement path
 * the sandbox library would choose for its limits on this host (`planLimits`).
 * @module
 */
import type { CoopConfig, UserConfig } from "../config/config.ts";
import { errorMessage } from "../errors/coop_error.ts";
import {
  type AppliedLimits,
  cgroupHost,
  planLimits,
  resolvePolicy,
  type SandboxPolicyInput,
} from "../sandbox/mod.ts";
import { HOST_ENV_ALLOWLIST, TOOL_PATH, WORKSPACE_MOUNT } from "../sandbox/environment.ts";
import { hostLayout } from "../sandbox/host_layout.ts";
import { etcFiles } from "../sandbox/spec.ts";
import { decide, type Principal, type Situation } from "../trust/authorization.ts";
import { scopeFor } from "../tools/path_scope.ts";
import { sandboxPolicyForUser } from "../tools/sandbox_placement.ts";
import { ToolExecutor } from "../tools/tool_executor.ts";
import { loadEnvironment } from "../environments/environment_state.ts";
import { sessionUpper } from "../environments/environment_mounts.ts";
import { rmdirSync } from "node:fs";

/** One mount of the sandbox's root, as `coop explain` lists it. */
export interface ExplainedMount {
  /** The path inside the sandbox. */
  inside: string;
  /** What is there: a host path, `tmpfs`, `synthesized`, `proc`, `devices`. */
  source: string;
  /** `rw` or `ro` (`symlink` for a link into a read-only tree). */
  mode: "rw" | "ro" | "symlink";
}

/** Where a principal's commands and file tools run, and under which policy. */
export interface SandboxExplanation {
  /** Where `bash` and `exec` run: the host (owner), the sandbox, or nowhere (not allowed). */
  commandsRun: "host" | "sandbox" | "nowhere";
  /** The `authorize()` rule behind `commandsRun`. */
  rule: string;
  /** `[sandbox] enabled`. */
  sandboxEnabled: boolean;
  /** The directory the file tools (and the sandbox's `/work`) see. */
  workspace: { host: string; visibleAs: string };
  /** `bash`/`exec` timeouts: the default and the most the model may ask for. */
  timeouts: { defaultMs: number; maxMs: number };
  /**
   * How long a sandbox lives: one per command, or one per chat session (`lifetime =
   * "session"`: background processes stay between calls) stopped after `idleTimeoutMs` unused.
   */
  lifetime: { kind: "command" | "session"; idleTimeoutMs: number | null };
  /** The policy given to the sandbox library (absent on the host or when nothing runs). */
  policy?: SandboxPolicyInput;
  /** Why the policy is invalid (the sandbox would refuse every command), if it is. */
  policyError?: string;
  /** The root the sandbox builds, in mount order. */
  mounts?: ExplainedMount[];
  /** Network mode, allowlist and proxy limits. */
  network?: {
    mode: string;
    allowDomains: string[];
    proxyMaxConnections: number | null;
    neverDial: string[];
  };
  /**
   * The environment inside: fixed `PATH` and `HOME`, which host variables pass in, and the names
   * of those the policy sets (an environment's `COOP_SESSION` and `[env]`; `policy.env` has them).
   */
  environment?: { PATH: string; HOME: string; hostVariables: string[]; set: string[] };
  /** The limits and the path that would enforce them on this host (`planLimits`). */
  limits?: AppliedLimits;
  /** Why no path can enforce a requested limit here (the sandbox would refuse to start). */
  limitsError?: string;
  /**
   * Set when the environment keeps its upper layer per chat session (`[session] upper =
   * "session"`): the policy is shown for this placeholder session, whose layer path and
   * `COOP_SESSION` stand for any real session's.
   */
  placeholderSession?: string;
}

/**
 * The session `coop explain` shows an `upper = "session"` environment with: not a valid session
 * id (no channel produces one), so it never names a real session's layer.
 */
export const PLACEHOLDER_SESSION = "(any-session)";

function mountsOf(policy: SandboxPolicyInput, perSession: boolean): ExplainedMount[] {
  const resolved = resolvePolicy(policy);
  const mounts: ExplainedMount[] = [
    { inside: "/", source: "tmpfs (empty root)", mode: "ro" },
    { inside: WORKSPACE_MOUNT, source: resolved.workspace, mode: "rw" },
    ...resolved.protectedNames.map((name): ExplainedMount => ({
      inside: `${WORKSPACE_MOUNT}/${name}, ${WORKSPACE_MOUNT}/*/${name}`,
      source: "the same, re-mounted (protected_names)",
      mode: "ro",
    })),
  ];
  const rootfs = resolved.rootfs;
  if (rootfs && "upper" in rootfs) {
    // An environment: the overlay's top-level directories are bound onto the read-only root.
    const lower = rootfs.lower === "host"
      ? "the host's /usr (read-only)"
      : `${rootfs.lower} (read-only)`;
    mounts.push({
      inside: "/usr, /etc, /var …",
      source: `overlay: ${rootfs.upper} (${
        perSession ? "the session's own layer, discarded when it ends" : "their own layer, kept"
      }) over ${lower}`,
      mode: "rw",
    });
    for (const bind of resolved.persist) {
      mounts.push({ inside: bind.target, source: bind.source, mode: "rw" });
    }
  } else {
    for (const entry of hostLayout()) {
      mounts.push(
        entry.kind === "bind"
          ? { inside: entry.inside, source: entry.host, mode: "ro" }
          : { inside: entry.inside, source: `→ ${entry.target}`, mode: "symlink" },
      );
    }
  }
  for (const path of resolved.readOnlyPaths) {
    mounts.push({ inside: path, source: path, mode: "ro" });
  }
  for (const path of Object.keys(etcFiles(resolved))) {
    mounts.push({ inside: path, source: "synthesized", mode: "ro" });
  }
  mounts.push(
    { inside: "/tmp", source: `tmpfs, ${resolved.tmpSizeBytes} bytes`, mode: "rw" },
    { inside: "/dev", source: "null zero full random urandom tty, own pts and shm", mode: "rw" },
    { inside: "/proc", source: "proc of the sandbox's own pid namespace", mode: "rw" },
  );
  return mounts;
}

/**
 * Explains where `principal`'s commands run in `situation` and, when that is the sandbox, the
 * policy and limits it would get. `user` is the configured user (for their overrides);
 * `groupDir` the group chat's directory under the workspace, in a group.
 */
export function explainSandbox(
  config: CoopConfig,
  principal: Principal,
  situation: Situation,
  user: UserConfig | undefined,
  groupDir?: string,
): SandboxExplanation {
  const bash = decide(principal, situation, { kind: "tool", tool: "bash" });
  const commandsRun = !bash.allowed ? "nowhere" : bash.placement === "host" ? "host" : "sandbox";
  // The executor's rule: the owner's tools see the whole workspace on the host.
  const scope = scopeFor(config, principal.name, bash.effectiveTrust === "owner", groupDir);
  // The same merge a tool call uses: [sandbox], then the user's overrides.
  const settings = new ToolExecutor(config, { env: {} }).settingsFor(user);
  const out: SandboxExplanation = {
    commandsRun,
    rule: bash.rule,
    sandboxEnabled: config.sandbox.enabled,
    workspace: { host: scope.hostRoot, visibleAs: scope.visibleRoot },
    timeouts: { defaultMs: settings.timeoutMs, maxMs: settings.maxTimeoutMs },
    lifetime: settings.lifetime === "session"
      ? { kind: "session", idleTimeoutMs: settings.idleTimeoutMs }
      : { kind: "command", idleTimeoutMs: null },
  };
  // Only commands run in the sandbox; file tools run in the gateway, confined to the workspace.
  if (commandsRun !== "sandbox") return out;
  let policy: SandboxPolicyInput;
  let placeholderDir: string | undefined;
  try {
    // A turn's commands belong to its session; with layers per session, explain shows one.
    const environment = settings.environment === undefined
      ? undefined
      : loadEnvironment(config.agent.stateDir, settings.environment);
    const perSession = environment?.coopfile.session.upper === "session";
    const session = {
      channel: situation.channel,
      user: principal.name,
      session: PLACEHOLDER_SESSION,
    };
    if (environment && perSession) {
      const id = { channel: session.channel, id: PLACEHOLDER_SESSION };
      placeholderDir = sessionUpper(environment.paths, principal.name, id).dir;
    }
    policy = sandboxPolicyForUser(config, {
      user: principal.name,
      settings,
      workspace: scope.hostRoot,
      ...(perSession ? { session } : {}),
    });
    if (perSession) out.placeholderSession = PLACEHOLDER_SESSION;
  } catch (error) {
    // Their environment cannot be used (base not built, Coopfile invalid): every command fails.
    out.policyError = errorMessage(error);
    return out;
  } finally {
    // Building the policy made the placeholder's (empty) session directory: nothing stays.
    if (placeholderDir) removeEmptyDir(placeholderDir);
  }
  out.policy = policy;
  out.network = {
    mode: settings.network,
    allowDomains: policy.allowDomains ?? [],
    proxyMaxConnections: settings.network === "proxy"
      ? (settings.proxyMaxConnections ?? resolvePolicyOrNull(policy)?.proxyMaxConnections ?? null)
      : null,
    neverDial: policy.proxyNeverDial ?? [],
  };
  out.environment = {
    PATH: TOOL_PATH,
    HOME: WORKSPACE_MOUNT,
    hostVariables: [...HOST_ENV_ALLOWLIST, ...settings.envPassthrough],
    set: Object.keys(policy.env ?? {}).sort(),
  };
  try {
    out.mounts = mountsOf(policy, out.placeholderSession !== undefined);
    out.limits = planLimits(resolvePolicy(policy), cgroupHost()).applied;
  } catch (error) {
    const message = errorMessage(error);
    if (out.mounts === undefined) out.policyError = message;
    else out.limitsError = message;
  }
  return out;
}

/** Removes `dir` if it exists and is empty; anything else leaves it. */
function removeEmptyDir(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // Absent, or not empty (then it is not ours to remove).
  }
}

function resolvePolicyOrNull(policy: SandboxPolicyInput) {
  try {
    return resolvePolicy(policy);
  } catch {
    return null;
  }
}
