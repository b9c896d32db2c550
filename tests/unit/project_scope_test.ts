/**
 * `deno task check` (fmt and lint) covers the project's own sources only: the README's layout
 * puts a workspace and a state directory (and whatever the agent writes there) next to the
 * config in the checkout, and a stray file there must not fail `npm test`.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assertEquals, assertNotEquals } from "../assert.ts";

const DENO_JSON = fileURLToPath(new URL("../../deno.json", import.meta.url));
const BADLY_FORMATTED = "const  unused=1\nvar x = 2;;\n";

async function deno(cwd: string, args: string[]): Promise<{ code: number; output: string }> {
  const out = await new Deno.Command(Deno.execPath(), { args, cwd, env: { NO_COLOR: "1" } })
    .output();
  const text = new TextDecoder();
  return { code: out.code, output: text.decode(out.stdout) + text.decode(out.stderr) };
}

async function write(path: string, text: string): Promise<void> {
  await Deno.mkdir(join(path, ".."), { recursive: true });
  await Deno.writeTextFile(path, text);
}

Deno.test("fmt and lint skip workspace/, .coop/ and other non-project files, not src/", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-scope-" });
  try {
    await Deno.copyFile(DENO_JSON, join(dir, "deno.json"));
    await write(join(dir, "src", "ok.ts"), "export const ok = 1;\n");
    for (const stray of ["workspace/bob/tool.ts", ".coop/notes.ts", "scratch/try.ts"]) {
      await write(join(dir, stray), BADLY_FORMATTED);
    }
    for (const args of [["fmt", "--check"], ["lint"]]) {
      const r = await deno(dir, args);
      assertEquals(r.code, 0, `deno ${args.join(" ")} looked at a stray file:\n${r.output}`);
    }
    // The same file among the sources fails both: the checks still check.
    await write(join(dir, "src", "bad.ts"), BADLY_FORMATTED);
    for (const args of [["fmt", "--check"], ["lint"]]) {
      assertNotEquals((await deno(dir, args)).code, 0, `deno ${args.join(" ")} missed src/bad.ts`);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
