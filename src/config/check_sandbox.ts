/**
 * `coop check`: the sandbox and the workspace — limits the host cannot enforce, and
 * Coop's own files kept out of every sandbox.
 * @module
 */
import { isInside } from "../sandbox/path_containment.ts";
import { cgroupHost } from "../sandbox/mod.ts";
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError, configWarning } from "./config_diagnostic.ts";
import { userScopeDirectory } from "./user_directories.ts";

/** Limits this host cannot enforce, and unused allow_domains (timeouts: check_timeouts.ts). */
export function checkSandbox(config: CoopConfig, out: ConfigDiagnostic[]): void {
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
    if (
      table.cpus !== undefined && Deno.uid() !== 0 && !cgroupHost().v2?.controllers.includes("cpu")
    ) {
      out.push(configWarning(
        "config.limit_unenforceable",
        `${where}.cpus`,
        "needs cgroups: a delegated cgroup v2 subtree with the cpu controller, or root on a " +
          "cgroup v1 host; sandboxed bash will refuse to run (fail closed) — see docs/limits.md",
      ));
    }
    const domains = table.allow_domains as readonly string[] | undefined;
    if (domains && domains.length > 0 && table.network !== "proxy" && where === "sandbox") {
      out.push(configWarning(
        "config.allow_domains_unused",
        `${where}.allow_domains`,
        'only applies with network = "proxy"',
      ));
    }
  }
}

/** The config file and state directory overlapping a sandbox-visible directory. */
export function checkPrivatePaths(config: CoopConfig, out: ConfigDiagnostic[]): void {
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
        out.push(configError(
          "config.private_path_visible",
          path,
          `${target} overlaps the sandbox-visible directory ${dir}; move it out of the workspace`,
        ));
        break;
      }
    }
  }
}

/** `workspace = "/"`: the whole file system becomes the workspace. */
export function checkWorkspace(config: CoopConfig, out: ConfigDiagnostic[]): void {
  if (config.agent.workspace !== "/") return;
  out.push(configWarning(
    "config.workspace_root",
    "agent.workspace",
    `is "/": the owner's file tools reach the whole file system, and each sandboxed user's ` +
      "directory is created at its top (/<name>); give Coop a directory of its own, e.g. ~/coop",
  ));
}
