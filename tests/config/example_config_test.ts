/**
 * `coop.example.toml` is a valid config. Options Coop validates but does not read say so in
 * docs/config.md, and stay unread.
 */
import { fileURLToPath } from "node:url";
import { join, relative } from "node:path";
import { assert, assertEquals } from "../assert.ts";
import { parseConfig } from "../../src/config/config.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const EXAMPLE = Deno.readTextFileSync(join(ROOT, "coop.example.toml"));
const CONFIG_DOC = Deno.readTextFileSync(join(ROOT, "docs", "config.md"));

Deno.test("coop.example.toml is a valid config", () => {
  const config = parseConfig(EXAMPLE, "coop.example.toml", "/srv/coop", "/home/me");
  assertEquals(config.agent.id, "coop");
});

Deno.test("[agent] id is documented as a label Coop does not read, and nothing reads it", async () => {
  const row = CONFIG_DOC.split("\n").find((line) => line.startsWith("| `id`"));
  assert(row?.includes("Coop does not read it"), `docs/config.md [agent] id: ${row}`);
  assert(/^id = "coop" +#.*Coop does not read it/m.test(EXAMPLE), "coop.example.toml id");
  // When something starts to read it, this fails: say what it is used for in both files.
  const readers: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = join(dir, entry.name);
      if (entry.isDirectory) await walk(path);
      else if (entry.name.endsWith(".ts") && /\bagent\.id\b/.test(await Deno.readTextFile(path))) {
        readers.push(relative(ROOT, path));
      }
    }
  };
  await walk(join(ROOT, "src"));
  assertEquals(readers, ["src/config/config.ts"], "config.ts only copies it from the file");
});
