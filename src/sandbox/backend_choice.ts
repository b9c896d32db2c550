/**
 * Which sandbox backend this host has, found by looking (a probe), never assumed: Linux
 * namespaces; on macOS apple/container (a VM per user) when its service runs, else
 * `sandbox-exec`; anywhere else — or on a Mac with neither — none, with a message naming the
 * platform and what is missing. There is no host fallback: no backend, no command.
 * @module
 */
import { runCli, toolEnv } from "./cli_process.ts";
import { findTool, type HostPlatform } from "./platform.ts";

/** The backend a host offers. */
export type BackendChoice =
  | { kind: "linux-namespaces" }
  | { kind: "apple-container"; cli: string; version: string }
  | { kind: "sandbox-exec"; cli: string; note?: string }
  | { kind: "none"; reason: string };

const chosen = new WeakMap<HostPlatform, Promise<BackendChoice>>();

/** The backend of `platform`, probed once per platform object. */
export function chooseBackend(platform: HostPlatform): Promise<BackendChoice> {
  let choice = chosen.get(platform);
  if (!choice) {
    choice = probeBackend(platform);
    chosen.set(platform, choice);
  }
  return choice;
}

async function probeBackend(platform: HostPlatform): Promise<BackendChoice> {
  if (platform.os === "linux") return { kind: "linux-namespaces" };
  const where = platform.toolDirs.join(", ");
  if (platform.os !== "darwin") {
    return {
      kind: "none",
      reason: `no sandbox backend for ${platform.os} (${platform.arch}): Coop sandboxes ` +
        "non-owner commands with Linux namespaces, Landlock and seccomp, or on macOS with " +
        "apple/container or sandbox-exec; this host has none of them",
    };
  }
  let note: string | undefined;
  const container = findTool(platform, "container");
  if (container) {
    const status = await runCli(container, ["system", "status"], {
      env: toolEnv(),
      timeoutMs: 10_000,
    });
    if (status.exitCode === 0) {
      const version = await runCli(container, ["--version"], { env: toolEnv(), timeoutMs: 10_000 });
      return { kind: "apple-container", cli: container, version: version.stdout.trim() };
    }
    note = `apple/container is installed (${container}) but its service is not running ` +
      `(\`container system status\`: ${firstLine(status.stderr || status.stdout)}); ` +
      "run `container system start` to use it";
  }
  const sandboxExec = findTool(platform, "sandbox-exec");
  if (sandboxExec) return { kind: "sandbox-exec", cli: sandboxExec, ...(note ? { note } : {}) };
  return {
    kind: "none",
    reason: `no sandbox backend on macOS (${platform.arch}): ` +
      (note ?? `apple/container's \`container\` is not installed (looked in ${where})`) +
      `, and sandbox-exec was not found in ${where}`,
  };
}

function firstLine(text: string): string {
  return text.trim().split("\n")[0] || "no output";
}
