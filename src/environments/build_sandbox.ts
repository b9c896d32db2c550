/**
 * The build sandbox: `[packages]` (for images that did not get them from mmdebstrap),
 * `[setup] run` and `[agent] install` run inside a sandbox whose root is the new base's rootfs,
 * mounted read-write (policy `rootfs: { directory }`), with the Coopfile's `[network]` (through
 * the policy proxy and its `allow_domains` for "proxy") and `[env]`. Nothing runs on the host,
 * and the proxy never dials the gateway's own sockets, as for every other sandbox.
 * @module
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Coopfile } from "../config/coopfile.ts";
import { CoopError } from "../errors/coop_error.ts";
import { exec, resolvePolicy, type SandboxPolicyInput } from "../sandbox/mod.ts";
import type { BuildProgress, BuildStep } from "./build_progress.ts";
import { APT_SANDBOX_CONF } from "./debian_base.ts";

/** A build command exited non-zero or could not run; the message has its output's tail. */
export class BuildCommandError extends CoopError {
  /** `message` names the command, its exit status and the last lines it printed. */
  constructor(message: string) {
    super("environment.build_command", message);
    this.name = "BuildCommandError";
  }
}

/** How long one build command may run: 30 minutes (a large `apt-get install`, a compiler). */
export const BUILD_COMMAND_TIMEOUT_MS = 30 * 60_000;

/** The commands of each step, in order; packages only when the base did not get them already. */
export function buildCommands(
  coopfile: Coopfile,
): { step: BuildStep; command: string }[] {
  const commands: { step: BuildStep; command: string }[] = [];
  if (coopfile.packages.length > 0 && coopfile.base.kind !== "debian") {
    commands.push({
      step: "packages",
      command: "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y " +
        `--no-install-recommends ${coopfile.packages.map(shellQuote).join(" ")}`,
    });
  }
  for (const command of coopfile.setup) commands.push({ step: "setup", command });
  for (const command of coopfile.agent.install) commands.push({ step: "agent", command });
  return commands;
}

/** `value` as one single-quoted shell word. */
function shellQuote(value: string): string {
  return `'${value.replaceAll("'", `'\\''`)}'`;
}

/** How the build commands run, beside the base and its Coopfile. */
export interface BuildCommandsOptions {
  progress: BuildProgress;
  /** Learns the step each command is in, so that a failure names it. */
  phase: (step: BuildStep) => void;
  /**
   * The gateway's own sockets (`gatewaySockets()`), which the build sandbox's proxy never
   * dials — not even for an IP-literal `allow_domains` entry of the Coopfile.
   */
  neverDial?: readonly string[];
}

/** Where the build sandbox runs: its root, its empty `/work`, the sockets its proxy never dials. */
export interface BuildSandboxPlace {
  rootfs: string;
  workspace: string;
  neverDial?: readonly string[];
}

/** The policy of the build sandbox over `place.rootfs`. */
export function buildPolicy(coopfile: Coopfile, place: BuildSandboxPlace): SandboxPolicyInput {
  const { rootfs, workspace, neverDial = [] } = place;
  return {
    workspace,
    network: coopfile.network.mode,
    allowDomains: coopfile.network.mode === "proxy" ? [...coopfile.network.allowDomains] : [],
    proxyNeverDial: [...neverDial],
    env: { ...coopfile.env },
    rootfs: { directory: rootfs },
  };
}

/** Runs the Coopfile's build commands in a sandbox over `rootfs`. */
export async function runBuildCommands(
  rootfs: string,
  coopfile: Coopfile,
  options: BuildCommandsOptions,
): Promise<void> {
  const { progress, phase } = options;
  const commands = buildCommands(coopfile);
  if (commands.length === 0) return;
  // apt drops to _apt for downloads; with one mapped id that fails, so let it stay root.
  const aptConf = join(rootfs, "etc/apt/apt.conf.d");
  if (existsSync(aptConf) && !existsSync(join(aptConf, "99coop-sandbox"))) {
    writeFileSync(join(aptConf, "99coop-sandbox"), APT_SANDBOX_CONF, { mode: 0o644, flag: "wx" });
  }
  phase(commands[0].step);
  const workspace = mkdtempSync(join(tmpdir(), "coop-build-"));
  const policy = buildPolicy(coopfile, { rootfs, workspace, neverDial: options.neverDial });
  try {
    // Fail closed: a library that ignored `rootfs` would run the commands over the host's /usr.
    const resolved = resolvePolicy(policy) as { rootfs?: unknown };
    if (!resolved.rootfs) {
      throw new BuildCommandError(
        "this sandbox library has no directory root (policy rootfs), so build commands cannot " +
          "run inside the base; remove [packages]/[setup]/[agent] install or update Coop",
      );
    }
    for (const [i, { step, command }] of commands.entries()) {
      phase(step);
      progress.step(step, `[${i + 1}/${commands.length}] ${command}`);
      const started = performance.now();
      const alive = setInterval(
        () =>
          progress.step(
            step,
            `still running (${Math.round((performance.now() - started) / 1000)}s)`,
          ),
        10_000,
      );
      let result;
      try {
        result = await exec(policy, ["/bin/sh", "-c", command], {
          timeoutMs: BUILD_COMMAND_TIMEOUT_MS,
          cwd: "/work",
        });
      } finally {
        clearInterval(alive);
      }
      if (result.exitCode !== 0) {
        const tail = `${result.stdout}\n${result.stderr}`.trim().split("\n").slice(-15);
        throw new BuildCommandError(
          `"${command}" exited with ${result.exitCode}${
            result.timedOut ? " (timed out)" : ""
          }:\n  ` +
            tail.join("\n  "),
        );
      }
    }
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}
