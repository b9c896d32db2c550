/**
 * `spawnSandboxed()`: starts one command in a fresh sandbox and streams its output.
 *
 * Pipes are read with `node:net` sockets (epoll, no thread), never with blocking FFI calls,
 * which would occupy Deno's small blocking-thread pool. The sandbox is built by `startInit`
 * (start_init.ts) and then held by `trackSandbox` (running_sandbox.ts).
 * @module
 */
import { realpathSync } from "node:fs";
import { timeoutProblem } from "./duration.ts";
import { SandboxPolicyError } from "./errors.ts";
import { resolvePolicy, type SandboxPolicy, type SandboxPolicyInput } from "./policy.ts";
import { startInit } from "./start_init.ts";
import { trackSandbox } from "./running_sandbox.ts";
import type { SpawnOptions } from "./spawn_options.ts";
import type { SandboxProcess } from "./sandbox_process.ts";

export type { SandboxCpuTime } from "./reaper.ts";
export type { ProxyTestHooks, SpawnOptions } from "./spawn_options.ts";
export type { SandboxProcess, SandboxStatus } from "./sandbox_process.ts";

/**
 * Starts `argv` in a new sandbox under `policy`.
 *
 * @example
 * ```ts
 * const child = await spawnSandboxed({ workspace: "/tmp/ws" }, ["sh", "-c", "echo hi"]);
 * child.stdout.on("data", (chunk) => console.log(String(chunk)));
 * console.log((await child.status).exitCode);
 * ```
 */
export async function spawnSandboxed(
  policyInput: SandboxPolicyInput | SandboxPolicy,
  argv: readonly string[],
  options: SpawnOptions = {},
): Promise<SandboxProcess> {
  const policy = resolvePolicy(policyInput);
  // A timer past its ceiling fires at once: the command would be killed before it ran.
  const badTimeout = options.timeoutMs === undefined ? null : timeoutProblem(options.timeoutMs);
  if (badTimeout) throw new SandboxPolicyError(`timeoutMs ${badTimeout}`);
  const workspace = canonicalWorkspace(policy.workspace);
  // A directory root is opened refusing every symlink (ffi/init/rootfs.c), as the workspace.
  const rootfs = policy.rootfs && "directory" in policy.rootfs
    ? { directory: canonicalWorkspace(policy.rootfs.directory) }
    : policy.rootfs;
  return await spawnWorkspaceAsGiven({ ...policy, workspace, rootfs }, argv, options);
}

/**
 * The workspace with its parent directories resolved once, the last component kept as given.
 *
 * The parents are the owner's (a workspace root under a symlinked home keeps working); the
 * last component may be a directory another sandbox can replace (a shared workspace holds the
 * per-user ones), so it is never resolved here — resolving it would hand the C side a
 * symlink's target, e.g. `/etc`. The C side then opens the result refusing every symlink
 * (ffi/workspace.h), so a swap after this point fails setup closed with ELOOP.
 *
 * @example
 * ```ts
 * canonicalWorkspace("/home/me/ws/bob"); // "/var/home/me/ws/bob" when /home → /var/home
 * ```
 */
export function canonicalWorkspace(path: string): string {
  const trimmed = path.replace(/\/+$/, "") || "/";
  const slash = trimmed.lastIndexOf("/");
  const name = trimmed.slice(slash + 1);
  if (name === "" || name === "." || name === "..") return realPathOrAsIs(trimmed);
  const parent = realPathOrAsIs(trimmed.slice(0, slash) || "/");
  return parent === "/" ? `/${name}` : `${parent}/${name}`;
}

/** A path that cannot be resolved stays as given: setup then names the cause (ENOENT, …). */
function realPathOrAsIs(path: string): string {
  // Sync on purpose: async file calls run on Deno's blocking thread pool, which grows and
  // lingers (tests/sandbox/lifecycle_test.ts counts threads); this is a few cached lookups.
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Like `spawnSandboxed`, but opens `policy.workspace` exactly as given: a symlink anywhere in
 * it fails setup at "mount-workspace" with ELOOP. For tests of that refusal.
 */
export async function spawnWorkspaceAsGiven(
  policy: SandboxPolicy,
  argv: readonly string[],
  options: SpawnOptions = {},
): Promise<SandboxProcess> {
  const started = await startInit(policy, argv, options);
  return trackSandbox(started, argv, options.timeoutMs);
}
