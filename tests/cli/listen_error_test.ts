/** `coop start` on an address it cannot take: one line naming it and what to do, exit 1. */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

Deno.test("coop start: the port already in use is one clear line, exit 1, no stack", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-listen-" });
  const taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const port = (taken.addr as Deno.NetAddr).port;
    const config = join(dir, "coop.toml");
    await Deno.writeTextFile(
      config,
      `[agent]\nworkspace = "${dir}/ws"\nstate_dir = "${dir}/state"\n[sandbox]\nenabled = false\n` +
        `[channels.http]\nenabled = true\nlisten = "127.0.0.1:${port}"\n`,
    );
    const out = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--quiet", MAIN, "start", "--config", config],
      env: { NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assertEquals(out.code, 1, stderr);
    const line = stderr.split("\n").find((l) => l.includes("cannot listen"));
    assertMatch(
      line ?? stderr,
      new RegExp(
        `^coop: cannot listen on 127\\.0\\.0\\.1:${port} \\(channels\\.http\\.listen in .*coop\\.toml\\): ` +
          `the address is already in use; stop the program listening there .*or choose another port$`,
      ),
    );
    assertNotIncludes(stderr, "    at ");
    assertNotIncludes(stderr, "AddrInUse");
  } finally {
    taken.close();
    await Deno.remove(dir, { recursive: true });
  }
});
