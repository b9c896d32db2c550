/**
 * The schema of `coop.toml`, key for key. Unknown keys are errors everywhere.
 * @module
 */
import { z } from "zod";
import { TRUST_LEVELS } from "../trust/trust_level.ts";
import {
  DEFAULT_MAX_SEND_FILE_BYTES,
  diskQuotaSize,
  memorySize,
  sendFileSize,
  timeoutDuration,
  tmpSize,
} from "./config_units.ts";
import { cronScheduleProblem } from "./cron_schedule.ts";
import { matchPatternProblem } from "../trust/match_pattern.ts";
import { parseAllowEntry } from "../sandbox/mod.ts";
import { PROVIDER_KINDS } from "./provider_kinds.ts";
import { USER_NAME_PATTERN, USER_NAME_RULE } from "./user_name.ts";
import { pairingSchema } from "./pairing_settings.ts";
import { budgetSchema } from "./budget_settings.ts";
import { signalChannelSchema, telegramChannelSchema } from "./messenger_schema.ts";

/** Network modes config accepts (docs/network.md). */
export const CONFIG_NETWORK_MODES = ["none", "host", "proxy", "public"] as const;

/** When the agent answers in a group: when addressed (mention, reply, /command), or always. */
export const GROUP_RESPOND_MODES = ["mention", "all"] as const;

/** Workspace scopes: `user` gives each non-owner `<workspace>/<name>`; `shared` one common dir. */
export const WORKSPACE_SCOPES = ["user", "shared"] as const;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** An allowlist entry as the proxy parses it (docs/network.md). */
const allowDomain = z.string().superRefine((entry, ctx) => {
  try {
    parseAllowEntry(entry);
  } catch (error) {
    ctx.addIssue({ code: "custom", message: (error as Error).message });
  }
});

const envName = z.string().regex(ENV_NAME, "must be an environment variable name like MY_VAR");
const name = z.string().regex(USER_NAME_PATTERN, USER_NAME_RULE);

const matchPattern = z.string().superRefine((pattern, ctx) => {
  const problem = matchPatternProblem(pattern);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

const sandboxOverrideShape = {
  network: z.enum(CONFIG_NETWORK_MODES).optional(),
  allow_domains: z.array(allowDomain).optional(),
  max_connections: z.number().int("must be a whole number").min(1, "must be at least 1")
    .max(4096, "must be at most 4096").optional(),
  memory: memorySize.optional(),
  pids_limit: z.number().int("must be a whole number").positive("must be > 0").optional(),
  cpus: z.number().positive("must be > 0").optional(),
  disk_quota: diskQuotaSize.optional(),
  inode_quota: z.number().int("must be a whole number").min(16, "must be at least 16")
    .max(2 ** 32, "must be at most 4294967296").optional(),
  /** The owner-role spec's spelling of `network` (true: "public", false: "none"); warned. */
  allow_network: z.boolean().optional(),
  timeout: timeoutDuration.optional(),
  max_timeout: timeoutDuration.optional(),
  tmp_size: tmpSize.optional(),
  env_passthrough: z.array(envName).optional(),
  protected_names: z.array(
    z.string().regex(/^[^/]+$/, "must be a file or directory name (no /)").refine(
      (n) => n !== "." && n !== "..",
      "must not be . or ..",
    ),
  ).optional(),
  workspace_scan_limit: z.number().int("must be a whole number").min(1000, "must be at least 1000")
    .max(100_000_000, "must be at most 100000000").optional(),
  lifetime: z.enum(["command", "session"]).optional(),
  idle_timeout: timeoutDuration.optional(),
  /** A Coopfile's path (relative to coop.toml): the environment (docs/environments.md). */
  environment: z.string().min(1, "must be the path of a Coopfile").optional(),
};

/** Per-user or per-cron-job sandbox overrides. */
export const sandboxOverridesSchema = z.strictObject(sandboxOverrideShape);

/** The `[sandbox]` table. */
export const sandboxSchema = z.strictObject({
  enabled: z.boolean().default(true),
  workspace_scope: z.enum(WORKSPACE_SCOPES).default("user"),
  ...sandboxOverrideShape,
});

/** `[channels.http]` limits on clients: deadlines (ms once parsed) and the connection cap. */
const httpConnectionShape = {
  headers_timeout: timeoutDuration.default(10_000),
  request_timeout: timeoutDuration.default(30_000),
  max_connections: z.number().int("must be a whole number").min(1, "must be at least 1")
    .max(65_536, "must be at most 65536").default(256),
};

function requestTimeoutCoversHeaders(
  http: { headers_timeout: number; request_timeout: number },
  ctx: z.RefinementCtx,
): void {
  if (http.request_timeout < http.headers_timeout) {
    ctx.addIssue({
      code: "custom",
      path: ["request_timeout"],
      message: "must be at least headers_timeout (the head is part of the request)",
    });
  }
}

/** `host:port` or `[v6]:port`, port 1-65535. */
// Port 0 asks the kernel for a free port (coop start prints the one it got).
const LISTEN = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(0|[1-9][0-9]{0,4})$/;

/** One `[[providers]]` entry; `type` is the older spelling of `kind` and still accepted. */
export const providerSchema = z.strictObject({
  name: z.string().regex(
    /^[A-Za-z0-9][A-Za-z0-9_.-]*$/,
    'must be letters, digits, _ . or - (it is the part of agent.model before the first "/")',
  ),
  kind: z.enum(PROVIDER_KINDS).optional(),
  type: z.enum(PROVIDER_KINDS).optional(),
  base_url: z.url("must be a URL").optional(),
  api_key_env: envName.optional(),
  /** The model ids `agent.model` may name with this provider; absent: any (check_providers.ts). */
  models: z.array(z.string().min(1))
    .min(1, "must list at least one model id (leave models out to allow any)").optional(),
  connect_timeout: timeoutDuration.optional(),
  first_byte_timeout: timeoutDuration.optional(),
  idle_timeout: timeoutDuration.optional(),
}).superRefine((p, ctx) => {
  if (p.kind === undefined && p.type === undefined) {
    ctx.addIssue({
      code: "custom",
      path: ["kind"],
      message: `is required: one of ${PROVIDER_KINDS.map((k) => `"${k}"`).join(", ")}`,
    });
  } else if (p.kind !== undefined && p.type !== undefined && p.kind !== p.type) {
    ctx.addIssue({ code: "custom", path: ["type"], message: "contradicts kind; remove type" });
  }
  if (p.kind === "openai_compatible" || p.type === "openai_compatible") {
    if (p.base_url === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["base_url"],
        message: 'is required for kind "openai_compatible" (e.g. "https://openrouter.ai/api/v1")',
      });
    }
  }
}).transform(({ type, ...rest }) => ({
  ...rest,
  kind: (rest.kind ?? type) as (typeof PROVIDER_KINDS)[number],
}));

/** How many turns of one person may run at once (ATTACKS R14; docs/config.md). */
const concurrentTurns = z.number().int("must be a whole number").min(1, "must be at least 1")
  .max(1000, "must be at most 1000");

/** `[agent] owner_leak_scan`: what of the owner's turns the leak detector scans (docs/security.md). */
export const OWNER_LEAK_SCANS = ["channel_replies", "everything", "off"] as const;

/** `[agent]` keys of the per-person turn cap; `[[users]] max_concurrent_turns` overrides one. */
const turnLimitShape = {
  max_concurrent_turns_per_user: concurrentTurns.default(4),
  max_queued_turns_per_user: z.number().int("must be a whole number").min(0, "must be at least 0")
    .max(10000, "must be at most 10000").default(8),
};

/** The whole of `coop.toml`. */
export const configSchema = z.strictObject({
  agent: z.strictObject({
    id: name.default("coop"),
    model: z.string().min(1, "must not be empty").optional(),
    max_iterations: z.number().int("must be a whole number").min(1).max(1000).default(25),
    max_tokens: z.number().int("must be a whole number").min(1).default(8192),
    workspace: z.string().min(1, "must not be empty").optional(),
    state_dir: z.string().min(1, "must not be empty").optional(),
    owner_leak_scan: z.enum(OWNER_LEAK_SCANS).default("channel_replies"),
    ...turnLimitShape,
    max_send_file_size: sendFileSize.default(DEFAULT_MAX_SEND_FILE_BYTES),
  }).prefault({}),
  users: z.array(z.strictObject({
    name,
    trust: z.enum(TRUST_LEVELS),
    match: z.array(matchPattern).default([]),
    sandbox: sandboxOverridesSchema.optional(),
    max_concurrent_turns: concurrentTurns.optional(),
    budget: budgetSchema.optional(),
  })).default([]),
  groups: z.array(z.strictObject({
    name: z.string().min(1).optional(),
    match: z.array(matchPattern).min(1, "must list at least one pattern"),
    trust: z.enum(TRUST_LEVELS).default("familiar"),
    respond: z.enum(GROUP_RESPOND_MODES).default("mention"),
    budget: budgetSchema.optional(),
  })).default([]),
  sandbox: sandboxSchema.default({ enabled: true, workspace_scope: "user" }),
  cron: z.array(z.strictObject({
    name: z.string().min(1, "must not be empty"),
    schedule: z.string().superRefine((schedule, ctx) => {
      const problem = cronScheduleProblem(schedule);
      if (problem) ctx.addIssue({ code: "custom", message: `invalid cron schedule: ${problem}` });
    }),
    user: z.string().min(1, "must name a user"),
    message: z.string().min(1, "must not be empty"),
    reply_to: z.string().refine(
      (v) => v === "log" || /^https?:\/\/[^\s]+$/.test(v) && URL.canParse(v),
      'must be "log" or an http:// or https:// URL',
    ).default("log"),
    sandbox: sandboxOverridesSchema.optional(),
  })).default([]),
  providers: z.array(providerSchema).default([]),
  pairing: pairingSchema,
  channels: z.strictObject({
    terminal: z.strictObject({
      enabled: z.boolean().default(true),
      user: z.string().min(1).optional(),
    }).optional(),
    http: z.strictObject({
      enabled: z.boolean().default(false),
      listen: z.string().regex(LISTEN, 'must be "host:port", e.g. "127.0.0.1:8787"').refine(
        (v) => Number(v.slice(v.lastIndexOf(":") + 1)) <= 65535,
        "port must be 0-65535 (0: any free port)",
      ).default("127.0.0.1:8787"),
      max_body_bytes: z.number().int().min(1024, "must be at least 1024").default(1 << 20),
      ...httpConnectionShape,
      tokens: z.array(z.strictObject({
        id: z.string().regex(/^[a-z0-9][a-z0-9_.-]*$/, "must be lowercase letters, digits, . _ -"),
        token_env: envName,
      })).default([]),
    }).superRefine(requestTimeoutCoversHeaders).optional(),
    telegram: telegramChannelSchema.optional(),
    signal: signalChannelSchema.optional(),
  }).default({}),
});

/** `coop.toml` as parsed and validated, still in config's own (snake_case) shape. */
export type RawConfig = z.output<typeof configSchema>;
/** Sandbox overrides as parsed (sizes in bytes, durations in milliseconds). */
export type RawSandboxOverrides = z.output<typeof sandboxOverridesSchema>;
