/**
 * Proof that each protection is load-bearing: a debug library built without one layer
 * (`build:ffi --disable LAYER`) must make the named test fail, while the release library
 * passes the same test. docs/security.md lists the same table.
 */
import { fileURLToPath } from "node:url";
import { buildDebugLibrary } from "../../scripts/debug_library.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { sandboxTest } from "./harness.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

/** layer → [test file, the test that must catch it]. */
const CATCHERS: Record<string, [string, string]> = {
  "seccomp": ["tests/sandbox/hardening_test.ts", "seccomp is installed"],
  "landlock": ["tests/sandbox/hardening_test.ts", "Landlock refuses a loopback TCP connect"],
  "capabilities": ["tests/sandbox/isolation_test.ts", "no capabilities and no_new_privs inside"],
  "no-new-privs": ["tests/sandbox/isolation_test.ts", "no capabilities and no_new_privs inside"],
  "netns": ["tests/sandbox/isolation_test.ts", "no network: only lo"],
  "pidns": ["tests/sandbox/isolation_test.ts", "ps shows only the sandbox's processes"],
  "close-fds": ["tests/sandbox/isolation_test.ts", "only fds 0, 1, 2 inside"],
};

async function run(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args,
    cwd: root,
    env: { NO_COLOR: "1", COOP_SANDBOX_TEST: "1", ...env },
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, output: text.decode(out.stdout) + text.decode(out.stderr) };
}

for (const [layer, [file, name]] of Object.entries(CATCHERS)) {
  sandboxTest(`without ${layer}, "${name}" fails (and passes with it)`, async () => {
    const debug = await buildDebugLibrary([layer]);
    assert(debug.ok, debug.output);
    const filter = ["test", "--allow-all", "--quiet", "--filter", name, file];
    const weakened = await run(filter, debug.env);
    assert(weakened.code !== 0, `the test still passed without ${layer}:\n${weakened.output}`);
    assertMatch(weakened.output, /FAILED \| 0 passed \| 1 failed/);
    const release = await run(filter);
    assertEquals(release.code, 0, release.output);
    assertMatch(release.output, /ok \| 1 passed \| 0 failed/);
  });
}
