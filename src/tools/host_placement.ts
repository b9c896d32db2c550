/**
 * Where the owner's commands run: on the host, in their own process group, with the gateway's
 * environment less every secret it holds (provider keys and channel tokens stay in the gateway).
 * @module
 */
import type { CoopConfig } from "../config/config.ts";
import { channelSecrets } from "../config/channel_secrets.ts";
import { type HostRunner, runOnHost } from "./host_runner.ts";
import type { CommandRunner } from "./tool_contract.ts";
import { MAX_CAPTURE_BYTES } from "./truncation.ts";

/** Runs the owner's commands on the host. */
export class HostPlacement {
  readonly #host: HostRunner;
  readonly #hostEnv: Record<string, string>;

  /** `env` is the gateway's environment (secrets are removed here); `host` runs the command. */
  constructor(config: CoopConfig, env: Record<string, string>, host: HostRunner = runOnHost) {
    this.#host = host;
    const secrets = new Set<string>();
    for (const p of config.providers) if (p.api_key_env) secrets.add(p.api_key_env);
    for (const [name] of channelSecrets(config)) secrets.add(name);
    this.#hostEnv = Object.fromEntries(Object.entries(env).filter(([k]) => !secrets.has(k)));
  }

  /** The command runner for one call, in `cwd`. */
  runner(cwd: string): CommandRunner {
    return (command, { timeoutMs, signal }) =>
      this.#host(command, {
        cwd,
        timeoutMs,
        env: this.#hostEnv,
        maxOutputBytes: MAX_CAPTURE_BYTES,
        signal,
      });
  }
}
