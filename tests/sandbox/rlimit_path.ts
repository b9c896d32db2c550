/**
 * Runs a sandbox on the rlimit path even as root, for tests of that path's guarantees. An
 * unprivileged invoker is on it already. Root on this host gets cgroup v1, so the sandbox is
 * started from a child process in a private mount namespace whose cgroup mounts are detached:
 * the gateway then finds no cgroup hierarchy, exactly as on a host without them. Nothing in
 * the library changes, so production cannot be steered onto the weaker path this way.
 * @module
 */
import {
  exec,
  type ExecOptions,
  type ExecResult,
  type SandboxPolicyInput,
} from "../../src/sandbox/mod.ts";

/** Runs `argv` like `exec`, on the rlimit path; throws if another path was chosen. */
export async function execOnRlimitPath(
  policy: SandboxPolicyInput,
  argv: string[],
  options: Pick<ExecOptions, "timeoutMs"> = {},
): Promise<ExecResult> {
  const r = Deno.uid() === 0
    ? await execInChild(policy, argv, options)
    : await exec(policy, argv, options);
  if (r.limits.path !== "rlimit") {
    throw new Error(`expected the rlimit path, got ${r.limits.path} (${r.limits.reason})`);
  }
  return r;
}

async function execInChild(
  policy: SandboxPolicyInput,
  argv: string[],
  options: Pick<ExecOptions, "timeoutMs">,
): Promise<ExecResult> {
  const self = new URL(import.meta.url).pathname;
  const request = JSON.stringify({ policy, argv, options });
  const out = await new Deno.Command("unshare", {
    args: [
      "--mount",
      "--propagation",
      "private",
      "sh",
      "-c",
      'umount --lazy /sys/fs/cgroup && exec "$@"',
      "sh",
      Deno.execPath(),
      "run",
      "--allow-all",
      "--quiet",
      self,
      request,
    ],
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  if (!out.success) {
    throw new Error(`the rlimit-path child failed: ${text.decode(out.stderr)}`);
  }
  return JSON.parse(text.decode(out.stdout));
}

if (import.meta.main) {
  const { policy, argv, options } = JSON.parse(Deno.args[0]);
  console.log(JSON.stringify(await exec(policy, argv, options)));
}
