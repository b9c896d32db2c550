import { fileURLToPath } from "node:url";
import { buildDebugLibrary } from "../../scripts/debug_library.ts";
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";
import { sandboxTest } from "./harness.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));
// Keep Deno's module cache where it is, not in the throwaway HOME.
const DENO_DIR = Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME")}/.cache/deno`;

/** Runs the CLI with a throwaway HOME, so canaries and the stored result land there. */
async function coop(args: string[], env: Record<string, string> = {}) {
  const home = await Deno.makeTempDir({ prefix: "coop-selftest-home-" });
  try {
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--quiet", `${root}src/cli/main.ts`, ...args],
      env: { HOME: home, XDG_STATE_HOME: `${home}/state`, DENO_DIR, ...env },
      stdin: "null",
    }).output();
    const text = new TextDecoder();
    const after = [...Deno.readDirSync(home)].map((e) => e.name);
    return {
      code: out.code,
      stdout: text.decode(out.stdout),
      stderr: text.decode(out.stderr),
      after,
      home,
    };
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

sandboxTest("coop sandbox test plants canaries, attacks them, passes, and cleans up", async () => {
  const r = await coop(["sandbox", "test"]);
  assertEquals(r.code, 0, r.stdout + r.stderr);
  assertMatch(r.stdout, /✓ a file in your home is unreadable/);
  assertMatch(r.stdout, /✓ a host process can be neither seen nor killed — still running/);
  assertMatch(
    r.stdout,
    /✓ no set-id file can be planted on the host — chmod 4755 in the workspace: host mode has no set-id bit/,
  );
  assertMatch(r.stdout, /sandbox self-test passed\n$/);
  assertNotIncludes(r.stdout, "ESCAPE");
  // Only the state directory remains (it holds the stored result); no canary is left behind.
  assertEquals(r.after, ["state"]);
});

sandboxTest("coop sandbox status shows the last self-test result", async () => {
  const home = await Deno.makeTempDir({ prefix: "coop-selftest-home-" });
  try {
    const env = { HOME: home, XDG_STATE_HOME: `${home}/state`, DENO_DIR };
    const run = (args: string[]) =>
      new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "--quiet", `${root}src/cli/main.ts`, ...args],
        env,
        stdin: "null",
      }).output();
    await run(["sandbox", "test"]);
    const status = new TextDecoder().decode((await run(["sandbox", "status"])).stdout);
    assertMatch(status, /last self-test \(.*\): passed/);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});

sandboxTest(
  "with the sandbox degraded (no seccomp), the self-test reports the escape and exits 1",
  async () => {
    const debug = await buildDebugLibrary(["seccomp"]);
    assert(debug.ok, debug.output);
    const r = await coop(["sandbox", "test", "--json"], debug.env);
    assertEquals(r.code, 1);
    const result = JSON.parse(r.stdout);
    assertEquals(result.passed, false);
    const failed = result.checks.filter((c: { ok: boolean }) => !c.ok).map((c: { id: string }) =>
      c.id
    );
    // Without the filter nothing refuses chmod 4755: the canary file is set-uid on the host.
    assertEquals(failed, ["setid", "userns", "privileges"]);
    const setid = result.checks.find((c: { id: string }) => c.id === "setid");
    assertMatch(setid.detail, /host mode has set-id bit/);
  },
);
