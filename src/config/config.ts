/**
 * Loads `coop.toml`: TOML → schema → the typed, path-resolved `CoopConfig`.
 * @module
 */
import { dirname, isAbsolute, join, resolve } from "node:path";
import { parseTomlDocument } from "./toml_document.ts";
import type { TrustLevel } from "../trust/trust_level.ts";
import type { Budget } from "./budget_settings.ts";
import { ConfigError } from "./config_diagnostic.ts";
import { configSchema, type OWNER_LEAK_SCANS, type RawConfig } from "./config_schema.ts";
import type { PairingSettings } from "./pairing_settings.ts";
import {
  globalSandboxSettings,
  overridesFromRaw,
  type SandboxSettings,
} from "./sandbox_settings.ts";

/** A configured user. */
export interface UserConfig {
  /** Unique name; also the user's directory under the workspace. */
  name: string;
  /** The user's own trust, before ceilings and taint. */
  trust: TrustLevel;
  /** Addresses that identify this user, e.g. `http:bob`. */
  match: readonly string[];
  /** Sandbox settings that differ from `[sandbox]`. */
  sandbox: Partial<SandboxSettings>;
  /** `max_concurrent_turns`: this user's own cap on turns at once, over `[agent]`'s. */
  maxConcurrentTurns?: number;
  /** `[users.budget]`: turns, tokens and sandbox seconds this user may use. */
  budget?: Budget;
}

/** A configured group chat and its trust ceiling. */
export interface GroupConfig {
  /** Optional label. */
  name?: string;
  /** Chat addresses, e.g. `telegram:-100123`. */
  match: readonly string[];
  /** The most trust anyone gets in this group. */
  ceiling: TrustLevel;
  /** `mention`: answer only messages that address the agent, keep the rest as context. */
  respond: "mention" | "all";
  /** `[groups.budget]`: what all turns in this group chat together may use. */
  budget?: Budget;
}

/** Where a cron job's reply goes: the log, or a POST to an HTTP callback. */
export type CronReplyTarget = { kind: "log" } | { kind: "http"; url: string };

/** A configured cron job. */
export interface CronJobConfig {
  /** Unique name. */
  name: string;
  /** Five-field cron schedule. */
  schedule: string;
  /** The user the job runs as. */
  user: string;
  /** The message sent to the agent. */
  message: string;
  /** Where the reply goes (`reply_to`). */
  replyTo: CronReplyTarget;
  /** Sandbox settings for this job, over the user's. */
  sandbox: Partial<SandboxSettings>;
}

/** `coop.toml`, validated, with paths made absolute and sizes and durations converted. */
export interface CoopConfig {
  /** Absolute path of the file this came from (or a label for in-memory text). */
  file: string;
  /** `[agent]`, with `workspace` and `stateDir` absolute. */
  agent: {
    id: string;
    /** `"<provider name>/<model id>"`. */
    model?: string;
    workspace: string;
    stateDir: string;
    /** Model calls per turn before the loop stops with a message. */
    maxIterations: number;
    /** Cap on tokens per model response. */
    maxTokens: number;
    /** What of the owner's turns is scanned for leaks (others' turns always are, wholly). */
    ownerLeakScan: typeof OWNER_LEAK_SCANS[number];
    /** Turns of one person that may run at once (the owner is exempt; see `turnLimitFor`). */
    maxConcurrentTurnsPerUser: number;
    /** Turns of one person that may wait beyond those; more are refused. */
    maxQueuedTurnsPerUser: number;
    /** Largest file `send_file` sends to a chat (`max_send_file_size`). */
    maxSendFileBytes: number;
  };
  /** `[[users]]`. */
  users: readonly UserConfig[];
  /** `[[groups]]`. */
  groups: readonly GroupConfig[];
  /** `[sandbox]`. */
  sandbox: { enabled: boolean; workspaceScope: "user" | "shared"; defaults: SandboxSettings };
  /** `[[cron]]`. */
  cron: readonly CronJobConfig[];
  /** `[pairing]`. */
  pairing: PairingSettings;
  /** `[[providers]]`, as validated (consumed by the agent runtime). */
  providers: RawConfig["providers"];
  /** `[channels.*]`, as validated (consumed by the channels). */
  channels: RawConfig["channels"];
  /** The validated file before conversion, for checks that report key paths. */
  raw: RawConfig;
}

function expandPath(path: string, baseDir: string, home: string | undefined): string {
  if (path === "~" || path.startsWith("~/")) {
    if (!home) throw new Error("HOME is not set");
    return join(home, path.slice(1));
  }
  return isAbsolute(path) ? resolve(path) : resolve(baseDir, path);
}

/**
 * Parses and validates config text. Relative paths resolve against `baseDir`.
 * Throws `ConfigError` listing every problem with its key path.
 */
export function parseConfig(
  text: string,
  file: string,
  baseDir: string = dirname(resolve(file)),
  home: string | undefined = Deno.env.get("HOME"),
): CoopConfig {
  const raw = parseTomlDocument(text, file, configSchema);
  const workspace = expandPath(raw.agent.workspace ?? "workspace", baseDir, home);
  const stateDir = expandPath(raw.agent.state_dir ?? ".coop", baseDir, home);
  const { enabled, workspace_scope, ...globalOverrides } = raw.sandbox;
  return {
    file,
    agent: {
      id: raw.agent.id,
      model: raw.agent.model,
      workspace,
      stateDir,
      maxIterations: raw.agent.max_iterations,
      maxTokens: raw.agent.max_tokens,
      ownerLeakScan: raw.agent.owner_leak_scan,
      maxConcurrentTurnsPerUser: raw.agent.max_concurrent_turns_per_user,
      maxQueuedTurnsPerUser: raw.agent.max_queued_turns_per_user,
      maxSendFileBytes: raw.agent.max_send_file_size,
    },
    users: raw.users.map((u) => ({
      name: u.name,
      trust: u.trust,
      match: u.match,
      sandbox: overridesFromRaw(u.sandbox, baseDir),
      ...(u.max_concurrent_turns === undefined
        ? {}
        : { maxConcurrentTurns: u.max_concurrent_turns }),
      ...(u.budget ? { budget: u.budget } : {}),
    })),
    groups: raw.groups.map((g) => ({
      name: g.name,
      match: g.match,
      ceiling: g.trust,
      respond: g.respond,
      ...(g.budget ? { budget: g.budget } : {}),
    })),
    sandbox: {
      enabled,
      workspaceScope: workspace_scope,
      defaults: globalSandboxSettings(globalOverrides, baseDir),
    },
    cron: raw.cron.map((c) => ({
      name: c.name,
      schedule: c.schedule,
      user: c.user,
      message: c.message,
      replyTo: c.reply_to === "log" ? { kind: "log" } : { kind: "http", url: c.reply_to },
      sandbox: overridesFromRaw(c.sandbox, baseDir),
    })),
    pairing: {
      enabled: raw.pairing.enabled,
      codeTtlMs: raw.pairing.code_ttl,
      maxPending: raw.pairing.max_pending,
      ...(raw.pairing.budget ? { budget: raw.pairing.budget } : {}),
    },
    providers: raw.providers,
    channels: raw.channels,
    raw,
  };
}

/** Reads and parses a config file; a missing or unreadable file is a `ConfigError` too. */
export async function loadConfig(path: string): Promise<CoopConfig> {
  const file = resolve(path);
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (error) {
    const reason = error instanceof Deno.errors.NotFound
      ? "file not found"
      : error instanceof Error
      ? error.message
      : String(error);
    throw new ConfigError(file, [{
      severity: "error",
      code: "config.unreadable",
      path: "(file)",
      message: `cannot read config: ${reason}`,
    }], { cause: error });
  }
  return parseConfig(text, file);
}
