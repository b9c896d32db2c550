/**
 * Where a non-owner's command runs: the sandbox, after the escape self-test passed once, with the
 * policy built from their settings — or nowhere, with the reason (never on the host).
 * @module
 */
import { errorMessage } from "../errors/coop_error.ts";
import type { CoopConfig } from "../config/config.ts";
import { gatewaySockets } from "../config/gateway_sockets.ts";
import { type SandboxSettings, toSandboxPolicy } from "../config/sandbox_settings.ts";
import type { ExecOptions, SandboxPolicyInput } from "../sandbox/mod.ts";
import { exec as sandboxExec, selfTest } from "../sandbox/mod.ts";
import { isInside } from "../sandbox/path_containment.ts";
import { type CommandResult, type CommandRunner, ToolError } from "./tool_contract.ts";
import { MAX_CAPTURE_BYTES } from "./truncation.ts";

/** Runs a command in a sandbox; the real one is `exec` from the sandbox library. */
export type SandboxRunner = (
  policy: SandboxPolicyInput,
  argv: string[],
  options: ExecOptions,
) => Promise<CommandResult>;

/** The default gate: the built-in escape self-test must pass before any sandboxed command. */
export async function selfTestGate(): Promise<string | null> {
  const result = await selfTest();
  if (result.passed) return null;
  const escapes = result.checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
  return `the sandbox self-test failed (${result.error ?? escapes.join("; ")}); ` +
    "run `coop sandbox test` for details";
}

/** Runs non-owner commands in the sandbox; one per executor (the self-test gate runs once). */
export class SandboxPlacement {
  readonly #config: CoopConfig;
  readonly #sandbox: SandboxRunner;
  readonly #gate: () => Promise<string | null>;
  #gateResult: Promise<string | null> | undefined;

  /** `sandbox` runs the command (default: the library's `exec`); `gate` may refuse them all. */
  constructor(
    config: CoopConfig,
    sandbox: SandboxRunner = (policy, argv, options) => sandboxExec(policy, argv, options),
    gate: () => Promise<string | null> = selfTestGate,
  ) {
    this.#config = config;
    this.#sandbox = sandbox;
    this.#gate = gate;
  }

  /**
   * The command runner for one call in `workspace` under `settings`; `onCpuSeconds` receives
   * each command's measured CPU time (`ExecResult.cpu`).
   */
  runner(
    workspace: string,
    settings: SandboxSettings,
    onCpuSeconds?: (seconds: number) => void,
  ): CommandRunner {
    return async (command, { timeoutMs, signal }) => {
      // Coop's own files must never be inside what a sandbox can see; refuse rather than leak.
      for (const privatePath of [this.#config.file, this.#config.agent.stateDir]) {
        if (isInside(privatePath, workspace) || isInside(workspace, privatePath)) {
          throw new ToolError(
            "tool.private_path_visible",
            `refusing to run: ${privatePath} would be visible in the sandbox (${workspace})`,
          );
        }
      }
      // Not even an owner's IP-literal allowlist entry lets a sandbox reach the gateway itself.
      const policy = {
        ...toSandboxPolicy(settings, workspace),
        proxyNeverDial: gatewaySockets(this.#config),
      };
      // Once per executor (i.e. at gateway start): a failed self-test refuses every sandboxed
      // command from then on — fail closed, never onto the host.
      this.#gateResult ??= this.#gate();
      const refusal = await this.#gateResult;
      if (refusal) throw new ToolError("tool.sandbox_unavailable", refusal);
      let result: CommandResult;
      try {
        result = await this.#sandbox(policy, ["sh", "-c", command], {
          timeoutMs,
          maxOutputBytes: MAX_CAPTURE_BYTES,
          signal,
        });
      } catch (error) {
        const reason = errorMessage(error);
        throw new ToolError(
          "tool.sandbox_unavailable",
          `the sandbox could not start, so the command did not run: ${reason}`,
          { cause: error },
        );
      }
      if (result.cpu) onCpuSeconds?.((result.cpu.userMs + result.cpu.systemMs) / 1000);
      return result;
    };
  }
}
