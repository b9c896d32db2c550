import { fileURLToPath } from "node:url";
import { assert, assertMatch } from "../assert.ts";
import { LIBRARY_SOURCES } from "../../scripts/ffi_sources.ts";

const root = fileURLToPath(new URL("../..", import.meta.url));

Deno.test("the loader refuses a library built from other sources and says how to rebuild", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-stale-lib-" });
  try {
    // The real sources, but a hash that does not match them: what a stale build looks like.
    const gcc = await new Deno.Command("gcc", {
      args: [
        "-shared",
        "-fPIC",
        `-DCOOP_SOURCE_HASH="0000stale"`,
        `-I${root}build`,
        "-o",
        `${dir}/lib.so`,
        ...LIBRARY_SOURCES.map((source) => `${root}ffi/${source}`),
        "-pthread",
      ],
    }).output();
    assert(gcc.success, new TextDecoder().decode(gcc.stderr));
    const probe = await new Deno.Command(Deno.execPath(), {
      args: [
        "eval",
        `import { exec } from "${root}mod.ts";
        try { await exec({ workspace: "/tmp" }, ["true"]); console.log("RAN"); }
        catch (e) { console.log(e.code, e.message); }`,
      ],
      env: { COOP_SANDBOX_LIB: `${dir}/lib.so` },
      cwd: root,
    }).output();
    const out = new TextDecoder().decode(probe.stdout);
    assertMatch(out, /^sandbox\.unavailable .*built from other sources.*deno task build:ffi/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a missing library is a clear error, not a crash", async () => {
  const probe = await new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `import { exec } from "${root}mod.ts";
      try { await exec({ workspace: "/tmp" }, ["true"]); } catch (e) { console.log(e.code, e.message); }`,
    ],
    env: { COOP_SANDBOX_LIB: "/nonexistent/libcoop_sandbox.so" },
    cwd: root,
  }).output();
  assertMatch(
    new TextDecoder().decode(probe.stdout),
    /^sandbox\.unavailable cannot load the sandbox library/,
  );
});
