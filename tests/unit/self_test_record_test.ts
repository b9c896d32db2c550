/**
 * The self-test record is kept per sandbox library build: a result another checkout's (or a
 * debug) library produced is never shown as this library's.
 */
import { join } from "node:path";
import { assertEquals } from "../assert.ts";
import { lastSelfTest } from "../../src/sandbox/mod.ts";
import { libraryDigest } from "../../src/sandbox/ffi.ts";

const OTHER = "0".repeat(64);

function record(library?: string) {
  return JSON.stringify({
    passed: true,
    at: "2026-01-01T00:00:00.000Z",
    checks: [],
    ...(library ? { library } : {}),
  });
}

Deno.test("lastSelfTest shows only the record of the library this process loads", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-selftest-record-" });
  const previous = Deno.env.get("XDG_STATE_HOME");
  Deno.env.set("XDG_STATE_HOME", dir);
  try {
    const state = join(dir, "coop");
    await Deno.mkdir(state);
    // Another build's record and the old unkeyed file: neither is this library's.
    await Deno.writeTextFile(join(state, `sandbox-selftest-${OTHER}.json`), record(OTHER));
    await Deno.writeTextFile(join(state, "sandbox-selftest.json"), record());
    assertEquals(await lastSelfTest(), undefined);

    const mine = await libraryDigest();
    // A file under this library's name that claims another library is not trusted either.
    await Deno.writeTextFile(join(state, `sandbox-selftest-${mine}.json`), record(OTHER));
    assertEquals(await lastSelfTest(), undefined);

    await Deno.writeTextFile(join(state, `sandbox-selftest-${mine}.json`), record(mine));
    assertEquals((await lastSelfTest())?.library, mine);
  } finally {
    if (previous === undefined) Deno.env.delete("XDG_STATE_HOME");
    else Deno.env.set("XDG_STATE_HOME", previous);
    await Deno.remove(dir, { recursive: true });
  }
});
