/**
 * Where the owner's commands run: on the host, in their own process group, with the gateway's
 * environment less every secret it holds (provider keys and channel tokens stay in the gateway).
 * @module
 */
import type { CoopConfig } from "../config/config.ts";
import { configSecrets } from "../config/channel_secrets.ts";
import { join } from "node:path";
import { type HostArgvRunner, type HostRunner, runArgvOnHost, runOnHost } from "./host_runner.ts";
import type { ArgvRunner, CommandOptions, CommandRunner } from "./tool_contract.ts";
import { MAX_CAPTURE_BYTES } from "./truncation.ts";

/** Runs the owner's commands on the host. */
export class HostPlacement {
  readonly #host: HostRunner;
  readonly #hostArgv: HostArgvRunner;
  readonly #hostEnv: Record<string, string>;

  /**
   * `env` is the gateway's environment (secrets are removed here); `host` runs shell commands,
   * `hostArgv` programs with their arguments.
   */
  constructor(
    config: CoopConfig,
    env: Record<string, string>,
    host: HostRunner = runOnHost,
    hostArgv: HostArgvRunner = runArgvOnHost,
  ) {
    this.#host = host;
    this.#hostArgv = hostArgv;
    const secrets = new Set(configSecrets(config).map(([name]) => name));
    this.#hostEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !secrets.has(k)));
  }

  /** The command runner for one call in workspace `root`. */
  runner(root: string): CommandRunner {
    return (command, options) => this.#host(command, this.#options(root, options));
  }

  /** The program runner (`exec`) for one call in workspace `root`. */
  argvRunner(root: string): ArgvRunner {
    return (argv, options) => this.#hostArgv(argv, this.#options(root, options));
  }

  #options(root: string, { timeoutMs, signal, workingDir, env }: CommandOptions) {
    return {
      cwd: workingDir ? join(root, workingDir) : root,
      timeoutMs,
      env: env ? { ...this.#hostEnv, ...env } : this.#hostEnv,
      maxOutputBytes: MAX_CAPTURE_BYTES,
      signal,
    };
  }
}
