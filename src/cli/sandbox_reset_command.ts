/**
 * `coop sandbox reset --user NAME [--persist]` and `coop sandbox clean`: delete what sandboxes
 * wrote into environments (docs/environments.md "Lifecycle"), printing each deletion and the
 * space freed. Nothing in those trees is followed or executed (`sandbox_tree.ts`). `clean` also
 * removes the sandbox cgroups a Coop process killed outright left (a `coop run` or `coop start`
 * ended by SIGKILL), as `coop start` does when it starts.
 * @module
 */
import { parseArgs } from "node:util";
import { type CoopConfig, loadConfig } from "../config/config.ts";
import { ConfigError } from "../config/config_diagnostic.ts";
import { USER_NAME_PATTERN, USER_NAME_RULE } from "../config/user_name.ts";
import {
  cleanEnvironments,
  type Removed,
  resetUser,
} from "../environments/environment_lifecycle.ts";
import { sizeText } from "../environments/size_text.ts";
import { upperLocker } from "../environments/layer_removal.ts";
import { SandboxUpperInUseError } from "../sandbox/upper_lock.ts";
import {
  type CgroupSweep,
  type ProxyDirSweep,
  sweepDeadProxyDirs,
  sweepDeadSandboxCgroups,
} from "../sandbox/mod.ts";
import { readPairedPeople } from "../state/paired_people_reader.ts";
import { readSessionKeys } from "../state/session_keys_reader.ts";
import { callerPath } from "./caller_path.ts";
import { DEFAULT_CONFIG_FILE } from "./check_command.ts";
import { writeStderr } from "./stderr.ts";
import { UsageError } from "./usage_error.ts";
import { environmentSessionOf } from "../gateway/group_chat.ts";

const encoder = new TextEncoder();

function print(text: string): void {
  const bytes = encoder.encode(text);
  let offset = 0;
  while (offset < bytes.length) offset += Deno.stdout.writeSync(bytes.subarray(offset));
}

function parse(
  args: string[],
  options: Record<string, { type: "string" | "boolean" }>,
): Record<string, string | boolean | undefined> {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError((error as Error).message.split("\n")[0]);
  }
}

/** The config, or null after printing its errors (exit 1). */
async function configOf(file: string | undefined): Promise<CoopConfig | null> {
  const path = callerPath(file ?? DEFAULT_CONFIG_FILE);
  try {
    return await loadConfig(path);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    writeStderr(`coop: ${error.message}\n`);
    return null;
  }
}

/** One line per deletion and the total (and what a cgroup sweep did), or the JSON report. */
export function renderRemoved(
  removed: readonly Removed[],
  json: boolean,
  leftovers?: { cgroups: CgroupSweep; proxyDirs: ProxyDirSweep },
): string {
  const freed = removed.reduce((sum, r) => sum + r.bytes, 0);
  const partial = removed.some((r) => r.partial);
  const { cgroups, proxyDirs } = leftovers ?? {};
  if (json) {
    return JSON.stringify({ removed, freedBytes: freed, ...leftovers }, null, 2) + "\n";
  }
  const lines = removed.map((r) =>
    `removed ${r.what}: ${r.path} (${sizeText(r.bytes, r.partial)})`
  );
  if (removed.length) lines.push(`freed ${sizeText(freed, partial)}`);
  if (cgroups?.removed.length) {
    lines.push(`removed ${cgroups.removed.length} sandbox cgroups of processes that are gone`);
  }
  for (const path of cgroups?.kept ?? []) {
    lines.push(`kept ${path}: its process is gone, but it still holds processes`);
  }
  if (proxyDirs?.removed.length) {
    lines.push(`removed ${proxyDirs.removed.length} socket directories of proxies that are gone`);
  }
  return lines.length ? lines.join("\n") + "\n" : "nothing to remove\n";
}

/** `coop sandbox reset --user NAME [--persist] [--config FILE] [--json]`. */
export async function sandboxResetCommand(args: string[]): Promise<number> {
  const values = parse(args, {
    user: { type: "string" },
    persist: { type: "boolean" },
    config: { type: "string" },
    json: { type: "boolean" },
  });
  const user = values.user;
  if (typeof user !== "string") throw new UsageError("sandbox reset needs --user NAME");
  // The name becomes a path component: only a user name can be one.
  if (!USER_NAME_PATTERN.test(user)) throw new UsageError(`--user "${user}" ${USER_NAME_RULE}`);
  const config = await configOf(values.config as string | undefined);
  if (!config) return 1;
  const lock = await upperLocker();
  const removed = inUseRefused(() =>
    resetUser(config.agent.stateDir, user, values.persist === true, lock)
  );
  if (!removed) return 1;
  print(renderRemoved(removed, values.json === true));
  return 0;
}

/** `remove()`, or null after saying which layer a running sandbox has mounted. */
function inUseRefused(remove: () => Removed[]): Removed[] | null {
  try {
    return remove();
  } catch (error) {
    if (!(error instanceof SandboxUpperInUseError)) throw error;
    writeStderr(`coop: ${error.message}; it was not removed\n`);
    return null;
  }
}

/** `coop sandbox clean [--config FILE] [--json]`. */
export async function sandboxCleanCommand(args: string[]): Promise<number> {
  const values = parse(args, { config: { type: "string" }, json: { type: "boolean" } });
  const config = await configOf(values.config as string | undefined);
  if (!config) return 1;
  const paired = readPairedPeople(config.agent.stateDir);
  if ("problem" in paired) {
    // Without the paired people we cannot tell whose layers are whose: delete nothing.
    writeStderr(`coop: ${paired.problem}; nothing was removed\n`);
    return 1;
  }
  const sessions = readSessionKeys(config.agent.stateDir);
  if ("problem" in sessions) writeStderr(`coop: ${sessions.problem}; session uppers kept\n`);
  const lock = await upperLocker();
  const removed = inUseRefused(() =>
    cleanEnvironments(config, {
      knownUsers: new Set([...config.users.map((u) => u.name), ...paired.map((p) => p.name)]),
      sessions: "problem" in sessions ? null : sessions.map(environmentSessionOf),
      lock,
    })
  );
  if (!removed) return 1;
  // What processes killed outright left, as `coop start` sweeps it.
  const leftovers = { cgroups: sweepDeadSandboxCgroups(), proxyDirs: await sweepDeadProxyDirs() };
  print(renderRemoved(removed, values.json === true, leftovers));
  return 0;
}
