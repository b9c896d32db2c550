// The whole attack table once more, against an environment's overlay root (issue 14): the
// host's /usr under a fresh upper per row, so every row still finds the host programs it uses
// (the image-lower variant of the new rows below runs on the mini rootfs). After each row the
// upper holds nothing the host could be made to run: no set-id file, no device but whiteouts.
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../../assert.ts";
import { exec } from "../../../src/sandbox/mod.ts";
import { assertUpperInert, sharedBase, testEnvironment } from "../environment_fixture.ts";
import { withAttackVariant } from "./attack_table.ts";
import { overlayRows } from "./overlay_rows.ts";

const exists = (path: string) => Deno.lstat(path).then(() => true, () => false);

// Built before the attack files load: some set variables in this process that ldd would see.
const base = sharedBase();
const here = new URL(".", import.meta.url);
const files = [...Deno.readDirSync(here)]
  .map((entry) => entry.name)
  .filter((name) => name.endsWith("_test.ts") && name !== "overlay_root_test.ts")
  .sort();

await withAttackVariant({
  label: "overlay root, host lower",
  setUp: async () => {
    const env = await testEnvironment(base);
    const rootfs = env.rootfs("attacker", "host");
    return {
      policy: { rootfs },
      check: () => Promise.resolve(assertUpperInert(rootfs.upper)),
      dispose: env.dispose,
    };
  },
  expect: {
    // /usr is writable now, but only where the upper holds the directory (/usr/local): /usr/bin
    // is the host's, owned by an id the sandbox has none for, so overlayfs cannot copy it up
    // (EACCES). /etc is still the read-only tmpfs root's. The host's file and the canary are
    // unchanged either way.
    F2: async (r, _ws, canary) => {
      assertMatch(r.stdout, /\/etc\/x': Read-only file system/);
      assertMatch(r.stdout, /\/usr\/bin\/x': Permission denied/);
      assertEquals(await Deno.readTextFile(canary), "F2-original");
      assertEquals(await exists("/usr/bin/x"), false);
    },
    // An environment's sandbox also learns where its workspace is and when it was made
    // (issue 14); nothing else of the gateway's environment, and no secret, may appear.
    E1: (r, _ws, secret) => {
      assertNotIncludes(r.stdout, secret);
      const allowed = [
        ...["PATH", "HOME", "USER", "TMPDIR", "LANG", "TERM", "TZ"],
        ...["COOP_WORKSPACE", "COOP_CREATED"],
      ];
      const names = r.stdout.trim().split("\n").map((l) => l.slice(0, l.indexOf("=")));
      for (const name of names) assert(allowed.includes(name), `${name} leaked`);
      assert(names.includes("COOP_WORKSPACE") && names.includes("COOP_CREATED"));
    },
  },
}, async () => {
  for (const name of files) await import(new URL(`${name}?overlay-root`, here).href);
});

overlayRows(exec);
