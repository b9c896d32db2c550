// Issue 15, item 1: with no limits in coop.toml, a non-owner's sandboxed command still runs under
// memory 2 GiB and 512 processes — a fork loop stops near 512 and a 3 GiB allocation fails — and
// the result names the path that enforced them. As root: cgroup v1 here, and the rlimit path
// too (execOnRlimitPath); unprivileged: the rlimit path.
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { toSandboxPolicy } from "../../src/config/sandbox_settings.ts";
import { ToolExecutor } from "../../src/tools/tool_executor.ts";
import { exec, type ExecResult, type SandboxPolicyInput } from "../../src/sandbox/mod.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";
import { execOnRlimitPath } from "./rlimit_path.ts";

const CONFIG = `
[agent]
workspace = "ws"
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
`;

/** Bob's policy as the gateway builds it from a config that sets no limit. */
function bobPolicy(workspace: string): SandboxPolicyInput {
  const config = parseConfig(CONFIG, join(workspace, "coop.toml"), workspace);
  const executor = new ToolExecutor(config);
  return toSandboxPolicy(executor.settingsFor(config.users[1]), workspace);
}

// Forks sleeping children until the kernel refuses (or 2000, far past the limit).
const FORK_LOOP = `
import os, time
n = 0
err = "none"
try:
    while n < 2000:
        pid = os.fork()
        if pid == 0:
            time.sleep(60)
            os._exit(0)
        n += 1
except OSError as e:
    err = os.strerror(e.errno)
print("forked=%d stop=%s" % (n, err), flush=True)
`;

const ALLOC = "b = bytearray(3 << 30); print('ALLOCATED', len(b))";

type Runner = (policy: SandboxPolicyInput, argv: string[]) => Promise<ExecResult>;

const runners: Array<[string, Runner]> = [
  ["as invoked", (policy, argv) => exec(policy, argv, { timeoutMs: 60_000 })],
];
if (Deno.uid() === 0) {
  runners.push([
    "on the rlimit path",
    (p, argv) => execOnRlimitPath(p, argv, { timeoutMs: 60_000 }),
  ]);
}

for (const [how, run] of runners) {
  sandboxTest(`default limits (${how}): a fork loop stops at 512 processes`, async () => {
    await withWorkspace(async (workspace) => {
      const policy = bobPolicy(workspace);
      assertEquals([policy.memoryBytes, policy.pidsLimit], [2 * 2 ** 30, 512]);
      const r = await run(policy, ["python3", "-c", FORK_LOOP]);
      const forked = Number(/forked=(\d+)/.exec(r.stdout)?.[1]);
      assertMatch(r.stdout, /stop=Resource temporarily unavailable/, r.stderr);
      // 512 alive at once: the init and python itself count too.
      assert(forked >= 500 && forked <= 510, `${forked} processes forked under pids 512`);
      assertEquals(r.limits.pids?.max, 512);
      if (r.limits.path !== "rlimit") assertEquals(r.pidsLimitHit, true);
      console.log(
        `  ${how}: ${forked} forks, path ${r.limits.path} (${r.limits.pids?.enforcedBy})`,
      );
    });
  });

  sandboxTest(`default limits (${how}): a 3 GiB allocation fails`, async () => {
    await withWorkspace(async (workspace) => {
      const r = await run(bobPolicy(workspace), ["python3", "-c", ALLOC]);
      assert(!r.stdout.includes("ALLOCATED"), "the 3 GiB allocation must not succeed");
      assertEquals(r.limits.memory?.bytes, 2 * 2 ** 30);
      // cgroup paths: the kernel OOM-kills inside the sandbox; rlimit: the allocation fails.
      if (r.limits.path === "rlimit") assertMatch(r.stderr, /MemoryError/);
      else assertEquals([r.oomKilled, r.signal], [true, "SIGKILL"]);
      console.log(`  ${how}: path ${r.limits.path} (${r.limits.memory?.enforcedBy})`);
    });
  });
}
