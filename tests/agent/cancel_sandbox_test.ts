import { exec } from "../../src/sandbox/mod.ts";
import { assert, assertEquals } from "../assert.ts";
import { sandboxTest, withWorkspace } from "../sandbox/harness.ts";

sandboxTest("an aborted turn kills its sandbox: exec honours the signal", async () => {
  await withWorkspace(async (workspace) => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 200);
    const started = performance.now();
    const result = await exec({ workspace }, ["sh", "-c", "sleep 30 & sleep 30; wait"], {
      timeoutMs: 60_000,
      signal: controller.signal,
    });
    assert(performance.now() - started < 10_000, "the whole sandbox died, background job too");
    assertEquals(result.signal, "SIGKILL");
    assertEquals(result.timedOut, false);
  });
});
