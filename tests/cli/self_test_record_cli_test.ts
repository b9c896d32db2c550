/**
 * `coop sandbox status` shows the last self-test of the library it loads: never one another
 * build of the library (another checkout's, or a debug build) produced.
 */
import { fileURLToPath } from "node:url";
import { buildDebugLibrary } from "../../scripts/debug_library.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { sandboxTest } from "../sandbox/harness.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));
// Keep Deno's module cache where it is, not in the throwaway HOME.
const DENO_DIR = Deno.env.get("DENO_DIR") ?? `${Deno.env.get("HOME")}/.cache/deno`;

sandboxTest(
  "sandbox status: a self-test record of another library build is not current",
  async () => {
    const debug = await buildDebugLibrary(["seccomp"]);
    assert(debug.ok, debug.output);
    const home = await Deno.makeTempDir({ prefix: "coop-selftest-home-" });
    try {
      const base = { HOME: home, XDG_STATE_HOME: `${home}/state`, DENO_DIR, NO_COLOR: "1" };
      const coop = async (args: string[], env: Record<string, string> = {}) => {
        const out = await new Deno.Command(Deno.execPath(), {
          args: ["run", "--allow-all", "--quiet", MAIN, ...args],
          env: { ...base, ...env },
          stdin: "null",
        }).output();
        return new TextDecoder().decode(out.stdout);
      };
      // The debug build (no seccomp) fails its self-test, in the shared state directory.
      assertEquals(JSON.parse(await coop(["sandbox", "test", "--json"], debug.env)).passed, false);
      // The release library has not been tested: the debug build's failure is not its record.
      assertMatch(
        await coop(["sandbox", "status"]),
        /self-test: never run with this sandbox library/,
      );
      assertEquals(JSON.parse(await coop(["sandbox", "status", "--json"])).lastSelfTest, null);
      // Once tested, each build sees its own result.
      const passed = JSON.parse(await coop(["sandbox", "test", "--json"]));
      assertEquals(passed.passed, true);
      assertEquals(JSON.parse(await coop(["sandbox", "status", "--json"])).lastSelfTest, passed);
      const own = JSON.parse(await coop(["sandbox", "status", "--json"], debug.env)).lastSelfTest;
      assertEquals([own.passed, own.library === passed.library], [false, false]);
    } finally {
      await Deno.remove(home, { recursive: true });
    }
  },
);
