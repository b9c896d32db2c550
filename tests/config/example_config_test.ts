/**
 * `coop.example.toml` promises every option: each key of the schema appears in it (set or
 * commented out), and the file itself is a valid config. Options Coop validates but does not
 * read say so in docs/config.md, and stay unread.
 */
import { fileURLToPath } from "node:url";
import { join, relative } from "node:path";
import type { z } from "zod";
import { assert, assertEquals } from "../assert.ts";
import { configSchema } from "../../src/config/config_schema.ts";
import { parseConfig } from "../../src/config/config.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const EXAMPLE = Deno.readTextFileSync(join(ROOT, "coop.example.toml"));
const CONFIG_DOC = Deno.readTextFileSync(join(ROOT, "docs", "config.md"));

/** Every key path of `schema` (`sandbox.allow_network`), through optionals, defaults and arrays. */
function keyPaths(schema: z.core.$ZodType, prefix = ""): string[] {
  const def = schema._zod.def as unknown as Record<string, z.core.$ZodType> & { type: string };
  switch (def.type) {
    case "object":
      return Object.entries(def.shape as unknown as Record<string, z.core.$ZodType>).flatMap(
        ([key, value]) => {
          const path = prefix ? `${prefix}.${key}` : key;
          return [path, ...keyPaths(value, path)];
        },
      );
    case "optional":
    case "default":
    case "prefault":
      return keyPaths(def.innerType, prefix);
    case "array":
      return keyPaths(def.element, prefix);
    case "pipe":
      return keyPaths(def.in, prefix);
    default:
      return [];
  }
}

Deno.test("coop.example.toml shows every key of the schema, set or commented out", () => {
  const paths = keyPaths(configSchema as unknown as z.core.$ZodType);
  assert(paths.length > 100, `${paths.length} keys: the walk missed the schema's shape`);
  // A key counts as shown where it is set (`key =`, `# key =`), a table header (`[a.key]`,
  // `[[key]]`) or a quoted name in a comment (`"type" is accepted as …`).
  const missing = paths.filter((path) => {
    const key = path.split(".").at(-1)!;
    return !new RegExp(`(^|[\\s#\\[.("])${key}(\\s*=|[\\].]|")`, "m").test(EXAMPLE);
  });
  assertEquals(missing, []);
});

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
