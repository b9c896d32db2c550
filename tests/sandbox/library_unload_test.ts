// The trampoline is linked `-z nodelete` (scripts/build_ffi.ts): a realm that ends closes its
// handle to the library while a nonblocking call (`coop_syncfs`, upper_sync.ts) may still run in
// it on a runtime thread. Were the library unmapped then, that thread would return into nothing
// and the whole process would die with SIGSEGV (seen once under `deno test`, between modules).
import { mkdtempSync, rmSync } from "node:fs";
import { dirname, join } from "node:path";
import { libraryPath, loadTrampoline } from "../../src/sandbox/ffi.ts";
import { assertEquals } from "../assert.ts";
import { runCommand } from "../fixtures/run_command.ts";

Deno.test("closing the library while a nonblocking call runs in it does not crash the process", async () => {
  await loadTrampoline(); // builds nothing: fails first if the library is missing or stale
  // Beside the library, on a disk: on a tmpfs the sync would be over before the close.
  const dir = mkdtempSync(join(dirname(libraryPath()), "unload-"));
  try {
    const fixture = new URL("../fixtures/close_during_call.ts", import.meta.url).pathname;
    const r = await runCommand(Deno.execPath(), ["run", "-A", fixture, libraryPath(), dir]);
    assertEquals(
      { code: r.code, stdout: r.stdout.trim() },
      { code: 0, stdout: `result 0 ${dir.length + 1}` },
      r.stderr,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
