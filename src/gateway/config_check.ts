/**
 * Checks that need the whole config: duplicates, owners, cron users, secrets, scopes.
 * @module
 */
import { parseModelRef } from "../agent/provider_registry.ts";
import { relative } from "node:path";
import { PUBLIC_NAME, TERMINAL_OWNER_NAME } from "./router.ts";
import { channelSecrets } from "./channel_secrets.ts";
import type { CoopConfig } from "./config.ts";
import type { ConfigDiagnostic } from "./config_diagnostic.ts";
import { nextCronRun } from "./cron_schedule.ts";
import { isWildcardPattern } from "./match_pattern.ts";
import { checkNetwork } from "./network_check.ts";
import { userScopeDirectory } from "./user_scope.ts";

function error(code: string, path: string, message: string): ConfigDiagnostic {
  return { severity: "error", code, path, message };
}

function warning(code: string, path: string, message: string): ConfigDiagnostic {
  return { severity: "warning", code, path, message };
}

function isInside(path: string, dir: string): boolean {
  const rel = relative(dir, path);
  return rel === "" || (!rel.startsWith("..") && !rel.startsWith("/"));
}

/** Names of the router's default principals; a user by that name would share their sessions. */
const RESERVED_NAMES: readonly string[] = [PUBLIC_NAME, TERMINAL_OWNER_NAME];

function checkUsers(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const seenNames = new Map<string, number>();
  const patternOwner = new Map<string, number>();
  config.users.forEach((user, i) => {
    const previous = seenNames.get(user.name);
    if (previous !== undefined) {
      out.push(error(
        "config.duplicate_user",
        `users[${i}].name`,
        `user "${user.name}" is already defined at users[${previous}]`,
      ));
    } else seenNames.set(user.name, i);
    if (RESERVED_NAMES.includes(user.name)) {
      out.push(error(
        "config.reserved_user_name",
        `users[${i}].name`,
        `"${user.name}" names Coop's default principal for unknown senders; choose another name`,
      ));
    }
    const ownPatterns = new Set<string>();
    user.match.forEach((pattern, j) => {
      const path = `users[${i}].match[${j}]`;
      if (ownPatterns.has(pattern)) {
        out.push(warning("config.duplicate_match", path, `"${pattern}" is listed twice`));
        return;
      }
      ownPatterns.add(pattern);
      const other = patternOwner.get(pattern);
      if (other !== undefined) {
        out.push(error(
          "config.duplicate_match",
          path,
          `"${pattern}" also matches user "${config.users[other].name}"; a sender must map to ` +
            "exactly one user",
        ));
      } else patternOwner.set(pattern, i);
      if (isWildcardPattern(pattern) && (user.trust === "owner" || user.trust === "full")) {
        out.push(error(
          "config.wildcard_trust",
          path,
          `"${pattern}" would give every sender on that channel ${user.trust} trust`,
        ));
      }
    });
  });
  const owners = config.users.filter((u) => u.trust === "owner");
  // The issue lists "more than one owner" both as a warning and among the configs that must
  // fail; it fails here: the owner is the one person whose commands run unsandboxed on the
  // host, and a second owner is almost always a trust level typed by mistake.
  if (owners.length > 1) {
    out.push(error(
      "config.multiple_owners",
      "users",
      `${owners.length} users have trust "owner" (${
        owners.map((u) => u.name).join(", ")
      }); only one person may run bash on the host, unsandboxed — give the others "full"`,
    ));
  }
  if (config.sandbox.enabled && owners.length === 0) {
    out.push(warning(
      "config.no_owner",
      "users",
      'the sandbox is enabled but no user has trust "owner"; only the terminal default is owner',
    ));
  }
}

function checkGroups(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const seen = new Map<string, number>();
  config.groups.forEach((group, i) => {
    group.match.forEach((pattern, j) => {
      const other = seen.get(pattern);
      if (other !== undefined) {
        out.push(error(
          "config.duplicate_match",
          `groups[${i}].match[${j}]`,
          `"${pattern}" is already matched by groups[${other}]`,
        ));
      } else seen.set(pattern, i);
    });
  });
}

function isPlainRemoteHttp(url: string): boolean {
  const parsed = new URL(url);
  const host = parsed.hostname.replace(/^\[|\]$/g, "");
  const loopback = host === "localhost" || host === "::1" || /^127\./.test(host);
  return parsed.protocol === "http:" && !loopback;
}

function checkCron(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const jobs = new Set<string>();
  config.cron.forEach((job, i) => {
    if (jobs.has(job.name)) {
      out.push(error("config.duplicate_cron", `cron[${i}].name`, `"${job.name}" is defined twice`));
    }
    jobs.add(job.name);
    const user = config.users.find((u) => u.name === job.user);
    if (!user) {
      out.push(error(
        "config.unknown_cron_user",
        `cron[${i}].user`,
        `no user named "${job.user}"; a job runs as a configured user (their trust and sandbox)`,
      ));
    } else if (user.trust === "owner" && Object.keys(job.sandbox).length > 0) {
      out.push(warning(
        "config.owner_sandbox_overrides",
        `cron[${i}].sandbox`,
        `"${job.user}" is the owner, whose commands run on the host: only timeout and ` +
          "max_timeout apply, the other keys are ignored",
      ));
    }
    if (nextCronRun(job.schedule, Date.now()) === null) {
      out.push(warning(
        "config.cron_never_runs",
        `cron[${i}].schedule`,
        `"${job.schedule}" never fires (no such date); the job will not run`,
      ));
    }
    if (job.replyTo.kind === "http" && isPlainRemoteHttp(job.replyTo.url)) {
      out.push(warning(
        "config.cron_reply_plain_http",
        `cron[${i}].reply_to`,
        "replies would travel unencrypted to a non-loopback host; use https://",
      ));
    }
  });
}

function checkProviders(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const seen = new Map<string, number>();
  config.providers.forEach((provider, i) => {
    const previous = seen.get(provider.name);
    if (previous !== undefined) {
      out.push(error(
        "config.duplicate_provider",
        `providers[${i}].name`,
        `provider "${provider.name}" is already defined at providers[${previous}]`,
      ));
    } else seen.set(provider.name, i);
    const hosted = provider.kind === "anthropic" || provider.kind === "openai";
    if (hosted && provider.base_url === undefined && provider.api_key_env === undefined) {
      out.push(warning(
        "config.provider_without_key",
        `providers[${i}]`,
        `no api_key_env: requests to the hosted ${provider.kind} API carry no key and will be ` +
          "refused (401)",
      ));
    }
  });
  const model = config.agent.model;
  if (model === undefined) return;
  const ref = parseModelRef(model);
  if (!ref) {
    out.push(error(
      "config.model_format",
      "agent.model",
      `"${model}" must be "<provider name>/<model id>", e.g. "anthropic/claude-sonnet-4-5"`,
    ));
    return;
  }
  const name = ref.provider;
  if (!seen.has(name)) {
    const known = config.providers.map((p) => `"${p.name}"`).join(", ");
    out.push(error(
      "config.unknown_provider",
      "agent.model",
      `no [[providers]] entry named "${name}"` + (known ? ` (configured: ${known})` : ""),
    ));
  }
}

function checkSecrets(
  config: CoopConfig,
  env: (name: string) => string | undefined,
  out: ConfigDiagnostic[],
): void {
  const secrets = new Map<string, string>();
  config.providers.forEach((provider, i) => {
    if (provider.api_key_env === undefined) return;
    secrets.set(provider.api_key_env, `providers[${i}].api_key_env`);
    if (!env(provider.api_key_env)) {
      out.push(warning(
        "config.missing_provider_key",
        `providers[${i}].api_key_env`,
        `environment variable ${provider.api_key_env} is not set (provider "${provider.name}")`,
      ));
    }
  });
  for (const [name, path] of channelSecrets(config)) {
    secrets.set(name, path);
    if (!env(name)) {
      out.push(warning(
        "config.missing_channel_token",
        path,
        `environment variable ${name} is not set; requests with that token will be refused`,
      ));
    }
  }
  const tokenIds = new Set<string>();
  config.channels.http?.tokens.forEach((t, i) => {
    if (tokenIds.has(t.id)) {
      out.push(error(
        "config.duplicate_token_id",
        `channels.http.tokens[${i}].id`,
        `"${t.id}" is listed twice; each token speaks as http:<id>`,
      ));
    }
    tokenIds.add(t.id);
  });
  const passthroughs: Array<[string, readonly string[] | undefined]> = [
    ["sandbox", config.raw.sandbox.env_passthrough],
    ...config.raw.users.map((u, i) =>
      [`users[${i}].sandbox`, u.sandbox?.env_passthrough] as [string, readonly string[] | undefined]
    ),
    ...config.raw.cron.map((c, i) =>
      [`cron[${i}].sandbox`, c.sandbox?.env_passthrough] as [string, readonly string[] | undefined]
    ),
  ];
  for (const [where, names] of passthroughs) {
    names?.forEach((name, j) => {
      const source = secrets.get(name);
      if (source) {
        out.push(error(
          "config.secret_passthrough",
          `${where}.env_passthrough[${j}]`,
          `${name} is a secret (${source}); secrets never enter a sandbox`,
        ));
      }
    });
  }
}

function checkSandbox(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const tables: Array<[string, Record<string, unknown> | undefined]> = [
    ["sandbox", config.raw.sandbox],
    ...config.raw.users.map((u, i) =>
      [`users[${i}].sandbox`, u.sandbox] as [string, Record<string, unknown> | undefined]
    ),
    ...config.raw.cron.map((c, i) =>
      [`cron[${i}].sandbox`, c.sandbox] as [string, Record<string, unknown> | undefined]
    ),
  ];
  for (const [where, table] of tables) {
    if (!table) continue;
    if (table.cpus !== undefined && Deno.uid() !== 0) {
      out.push(warning(
        "config.limit_unenforceable",
        `${where}.cpus`,
        "needs cgroups, which Coop uses only as root on this kind of host; sandboxed bash " +
          "will refuse to run (fail closed) — see docs/limits.md",
      ));
    }
    const domains = table.allow_domains as readonly string[] | undefined;
    if (domains && domains.length > 0 && table.network !== "proxy" && where === "sandbox") {
      out.push(warning(
        "config.allow_domains_unused",
        `${where}.allow_domains`,
        'only applies with network = "proxy"',
      ));
    }
  }
  const check = (path: string, timeout: number, max: number) => {
    if (timeout > max) {
      out.push(error(
        "config.timeout_above_max",
        path,
        `timeout (${timeout / 1000} s) is above max_timeout (${max / 1000} s)`,
      ));
    }
  };
  check("sandbox.timeout", config.sandbox.defaults.timeoutMs, config.sandbox.defaults.maxTimeoutMs);
  config.users.forEach((u, i) => {
    const s = { ...config.sandbox.defaults, ...u.sandbox };
    if (u.sandbox.timeoutMs !== undefined || u.sandbox.maxTimeoutMs !== undefined) {
      check(`users[${i}].sandbox.timeout`, s.timeoutMs, s.maxTimeoutMs);
    }
  });
}

function checkPrivatePaths(config: CoopConfig, out: ConfigDiagnostic[]): void {
  // Coop's own files must never be reachable from a sandbox; a user's scope is what it sees.
  const visible = config.sandbox.workspaceScope === "shared"
    ? [userScopeDirectory(config, null)]
    : config.users.filter((u) => u.trust !== "owner").map((u) =>
      userScopeDirectory(config, u.name)
    );
  const privatePaths: Array<[string, string]> = [
    ["(file)", config.file],
    ["agent.state_dir", config.agent.stateDir],
  ];
  for (const [path, target] of privatePaths) {
    for (const dir of visible) {
      if (isInside(target, dir) || isInside(dir, target)) {
        out.push(error(
          "config.private_path_visible",
          path,
          `${target} overlaps the sandbox-visible directory ${dir}; move it out of the workspace`,
        ));
        break;
      }
    }
  }
  const terminalUser = config.channels.terminal?.user;
  if (terminalUser && !config.users.some((u) => u.name === terminalUser)) {
    out.push(
      error("config.unknown_user", "channels.terminal.user", `no user named "${terminalUser}"`),
    );
  }
}

/** Channels the config may describe that no command of this version serves. */
const UNSERVED_CHANNELS = ["telegram", "signal"] as const;

function checkChannels(config: CoopConfig, out: ConfigDiagnostic[]): void {
  for (const name of UNSERVED_CHANNELS) {
    if (config.channels[name]?.enabled) {
      out.push(warning(
        "config.channel_not_served",
        `channels.${name}.enabled`,
        `${name} is enabled, but this version of Coop does not serve it yet (coop start ignores it)`,
      ));
    }
  }
}

/**
 * Returns every problem that needs the whole config: errors stop Coop from starting.
 * `env` looks up environment variables (injectable for tests).
 */
export function checkConfig(
  config: CoopConfig,
  env: (name: string) => string | undefined = (name) => Deno.env.get(name),
): ConfigDiagnostic[] {
  const out: ConfigDiagnostic[] = [];
  checkUsers(config, out);
  checkGroups(config, out);
  checkCron(config, out);
  checkProviders(config, out);
  checkSecrets(config, env, out);
  checkSandbox(config, out);
  checkPrivatePaths(config, out);
  checkChannels(config, out);
  checkNetwork(config, out);
  return out;
}
