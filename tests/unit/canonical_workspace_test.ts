import { assertEquals } from "../assert.ts";
import { canonicalWorkspace } from "../../src/sandbox/spawn.ts";

async function withTree(fn: (dir: string) => void): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-canon-" }));
  try {
    await Deno.mkdir(`${dir}/real/ws`, { recursive: true });
    await Deno.symlink(`${dir}/real`, `${dir}/link`);
    await Deno.symlink("/etc", `${dir}/real/evil`);
    fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("canonicalWorkspace resolves symlinked parent directories", () =>
  withTree((dir) => {
    assertEquals(canonicalWorkspace(`${dir}/link/ws`), `${dir}/real/ws`);
    assertEquals(canonicalWorkspace(`${dir}/link/ws/`), `${dir}/real/ws`);
  }));

Deno.test("canonicalWorkspace never resolves the last component (the C side refuses it)", () =>
  withTree((dir) => {
    assertEquals(canonicalWorkspace(`${dir}/link/evil`), `${dir}/real/evil`);
  }));

Deno.test("canonicalWorkspace keeps an unresolvable path as given (setup names the cause)", () => {
  assertEquals(canonicalWorkspace("/nonexistent/coop/ws"), "/nonexistent/coop/ws");
  assertEquals(canonicalWorkspace("/ws"), "/ws");
});
