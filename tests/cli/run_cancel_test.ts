/**
 * `coop run` ended by Ctrl-C before its sandbox started — waiting for bob's upper layer, which
 * another sandbox has (its lock held here directly, as `coop shell` in another terminal would) —
 * exits at once with 128 + 2, saying that the command did not run, and it never runs: not after
 * the wait would have ended, nor when the lock comes free.
 * @module
 */
import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { sandboxTest, until } from "../sandbox/harness.ts";
import { writeBuiltManifest } from "../environments/environment_fixture.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";
import { resetUser } from "../../src/environments/environment_lifecycle.ts";
import { upperLocker } from "../../src/environments/layer_removal.ts";
import { loadTrampoline } from "../../src/sandbox/ffi.ts";
import { DEFAULT_UPPER_WAIT_MS, tryLockUpper } from "../../src/sandbox/upper_lock.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

const CONFIG = `
[agent]
workspace = "ws"
state_dir = "state"
[sandbox]
environment = "Coopfile"
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
`;

sandboxTest(
  "coop run, Ctrl-C while it waits for bob's upper layer: ends at once, unrun",
  async () => {
    const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-run-cancel-" }));
    // The sandbox's root (a dedicated uid when root runs the tests) must reach what it mounts.
    await Deno.chmod(dir, 0o755);
    const stateDir = join(dir, "state");
    try {
      await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
      const coopfile = join(dir, "Coopfile");
      await Deno.writeTextFile(coopfile, '[base]\nimage = "host"\n');
      writeBuiltManifest(stateDir, coopfile);
      const { upper } = environmentPaths(stateDir, coopfile).upper("bob");
      mkdirSync(join(upper, ".."), { recursive: true });
      const held = tryLockUpper(await loadTrampoline(), upper);
      assert(held, "bob's upper was free");
      let status: Deno.CommandStatus;
      let stderr: Promise<string>;
      try {
        const child = new Deno.Command(Deno.execPath(), {
          args: ["run", "--allow-all", "--quiet", MAIN, "run", "--user", "bob", "--", "touch"]
            .concat("/work/ran"),
          cwd: dir,
          stdin: "null",
          stdout: "null",
          stderr: "piped",
        }).spawn();
        stderr = new Response(child.stderr).text();
        // The library makes bob's upper right before it waits for the lock.
        assert(await until(() => existsSync(upper), 30_000), "coop run reached the lock");
        const signalled = performance.now();
        child.kill("SIGINT");
        status = await child.status;
        const tookMs = performance.now() - signalled;
        assert(tookMs < DEFAULT_UPPER_WAIT_MS / 2, `exited ${Math.round(tookMs)} ms after Ctrl-C`);
      } finally {
        held.release();
      }
      assertEquals([status.signal, status.code], [null, 130], await stderr);
      assertMatch(await stderr, /coop: SIGINT before the sandbox started; the command did not run/);
      assertEquals(existsSync(join(dir, "ws", "bob", "ran")), false, "the command never ran");
    } finally {
      resetUser(stateDir, "bob", true, await upperLocker());
      await Deno.remove(dir, { recursive: true });
    }
  },
);
