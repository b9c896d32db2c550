/**
 * A checkout whose path has a space (and a `%`) still loads its sandbox library: paths come
 * from `fileURLToPath`, never from `URL.pathname`, which keeps `%20`.
 */
import { cp } from "node:fs/promises";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assertEquals } from "../assert.ts";
import { sandboxTest } from "../sandbox/harness.ts";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** What `coop sandbox exec` needs of a checkout (not tools/: the test's own Deno runs it). */
const PARTS = ["deno.json", "deno.lock", "src", "ffi", "build"];

sandboxTest("a checkout under a path with a space runs coop sandbox exec", async () => {
  const base = await Deno.makeTempDir({ prefix: "coop-space-" });
  const checkout = join(base, "my coop 100% copy");
  try {
    for (const part of PARTS) await cp(join(ROOT, part), join(checkout, part), { recursive: true });
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-all",
        "--quiet",
        "--config",
        join(checkout, "deno.json"),
        join(checkout, "src/cli/main.ts"),
        "sandbox",
        "exec",
        "--",
        "sh",
        "-c",
        "echo inside",
      ],
      env: { NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertEquals([out.code, new TextDecoder().decode(out.stdout)], [0, "inside\n"], stderr);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
});
