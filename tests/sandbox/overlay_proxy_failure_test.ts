/**
 * A sandbox whose overlay work directory cannot be made fails closed, and leaves nothing of
 * what was started for it before: its policy proxy (relay thread, socket directory) is closed.
 */
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { exec } from "../../src/sandbox/mod.ts";
import { dropHeldOverlays } from "../../src/sandbox/held_overlay.ts";
import { resolvePolicy } from "../../src/sandbox/policy.ts";
import {
  ownProxyDirs,
  relayThreads,
  relayThreadsSettleAt,
  sandboxTest,
  withWorkspace,
} from "./harness.ts";
import { testEnvironment } from "./environment_fixture.ts";

/** Makes `dir` refuse new entries: immutable as root (root ignores modes), read-only else. */
async function refuseEntries(dir: string, refuse: boolean): Promise<void> {
  if (Deno.uid() === 0) {
    const out = await new Deno.Command("chattr", { args: [refuse ? "+i" : "-i", dir] }).output();
    assert(out.success, new TextDecoder().decode(out.stderr));
  } else {
    await Deno.chmod(dir, refuse ? 0o555 : 0o755);
  }
}

sandboxTest(
  "a work directory that cannot be made fails the command and closes its proxy",
  async () => {
    const env = await testEnvironment();
    dropHeldOverlays(false);
    try {
      await withWorkspace(async (workspace) => {
        const rootfs = env.rootfs("bob");
        const policy = { workspace, rootfs, network: "proxy" as const, allowDomains: ["x.test"] };
        // Made as the library would (owned by the sandbox's root), so that only making a work
        // directory in it fails, after the proxy has started.
        await Deno.mkdir(rootfs.work, { recursive: true });
        const resolved = resolvePolicy(policy);
        if (Deno.uid() === 0) {
          await Deno.chown(rootfs.work, resolved.sandboxUid, resolved.sandboxGid);
        }
        const threadsBefore = relayThreads();
        const dirsBefore = ownProxyDirs();
        await refuseEntries(rootfs.work, true);
        try {
          for (let i = 0; i < 3; i++) {
            const error = await assertRejects(() => exec(policy, ["true"]), Error);
            assertMatch(error.message, /EPERM|EACCES|permission|not permitted/i);
          }
        } finally {
          await refuseEntries(rootfs.work, false);
        }
        assert(await relayThreadsSettleAt(threadsBefore), `relay threads: ${relayThreads()}`);
        assertEquals(ownProxyDirs(), dirsBefore, "a proxy's socket directory was left");
      });
    } finally {
      dropHeldOverlays(true);
      await env.dispose();
    }
  },
);
