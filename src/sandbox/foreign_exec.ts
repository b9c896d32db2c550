/**
 * exec() on a host whose backend is not Linux namespaces: the macOS backends, or a typed
 * refusal naming the platform and what is missing — never the host itself.
 * @module
 */
import { chooseBackend } from "./backend_choice.ts";
import { SandboxUnavailableError } from "./errors.ts";
import type { ExecOptions, ExecResult } from "./exec.ts";
import { execWithContainer } from "./macos_container.ts";
import { execWithSandboxExec } from "./macos_sandbox_exec.ts";
import type { HostPlatform } from "./platform.ts";
import { resolvePolicy, type SandboxPolicy, type SandboxPolicyInput } from "./policy.ts";

/** Runs `argv` on `platform`'s backend (which is not Linux namespaces). */
export async function execOnForeignBackend(
  platform: HostPlatform,
  policyInput: SandboxPolicyInput | SandboxPolicy,
  argv: readonly string[],
  options: ExecOptions & { timeoutMs: number },
): Promise<ExecResult> {
  const policy = resolvePolicy(policyInput);
  const backend = await chooseBackend(platform);
  switch (backend.kind) {
    case "apple-container":
      return execWithContainer(backend.cli, policy, argv, options);
    case "sandbox-exec":
      return execWithSandboxExec(backend.cli, policy, argv, options);
    case "none":
      throw new SandboxUnavailableError(`${backend.reason}; the command was not run`);
    case "linux-namespaces":
      throw new Error("execOnForeignBackend is for hosts other than Linux");
  }
}
