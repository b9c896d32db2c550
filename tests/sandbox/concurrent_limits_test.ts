// Many sandboxes with limits at once: each one's limits are applied while the gateway receives a
// SIGCHLD for every other one that ends. cgroup v1 answers a write of memory.limit_in_bytes with
// EINTR when a signal is pending; the sandbox must not fail for it (found by the load benchmark:
// 20 concurrent exec()s with the default limits, "sandbox setup failed at step cgroup: EINTR").
import { assertEquals } from "../assert.ts";
import { exec } from "../../src/sandbox/mod.ts";
import { sandboxTest, withWorkspace } from "./harness.ts";

sandboxTest("limits: 20 sandboxes at a time, 10 rounds, none fails for a signal", async () => {
  await withWorkspace(async (workspace) => {
    const policy = { workspace, memoryBytes: 2 * 2 ** 30, pidsLimit: 512 };
    const failures: string[] = [];
    let path = "";
    for (let round = 0; round < 10; round++) {
      const results = await Promise.all(
        Array.from(
          { length: 20 },
          () =>
            exec(policy, ["sh", "-c", "true"], { timeoutMs: 30_000 }).then(
              (r) => {
                path = r.limits.path;
                if (r.exitCode !== 0) failures.push(`exit ${r.exitCode}: ${r.stderr}`);
              },
              (error) => failures.push(String(error)),
            ),
        ),
      );
      assertEquals(results.length, 20);
    }
    assertEquals(failures, [], `on the ${path} path`);
  });
});
