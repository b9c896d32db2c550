/**
 * The layout's one rule (docs/architecture.md): dependencies point one way. Each folder of
 * `src/` has a rank; a module may import its own folder or a folder of lower rank, never one
 * above it. The sandbox library imports nothing else of Coop, so it can be used alone.
 * @module
 */
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { readdirSync, readFileSync } from "node:fs";
import { assert, assertEquals } from "../assert.ts";

/** Lowest first: a folder may import only folders before it in this list. */
const RANKS = [
  "sandbox",
  "errors",
  "leaks",
  "trust",
  "config",
  "state",
  "workspace",
  "environments",
  "tools",
  "agent",
  "cron",
  "gateway",
  "channels",
  "cli",
] as const;

const SRC = fileURLToPath(new URL("../../src/", import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Relative specifiers of every static and dynamic import and re-export. */
export function importsOf(text: string): string[] {
  const found: string[] = [];
  // Static and dynamic imports, re-exports, and modules loaded by URL (workers).
  const pattern = /(?:\bfrom\s*|\bimport\s*\(?\s*|new URL\(\s*)"(\.{1,2}\/[^"]+\.ts)"/g;
  for (const match of text.matchAll(pattern)) found.push(match[1]);
  return found;
}

function folderOf(path: string): string {
  return relative(SRC, path).split("/")[0];
}

Deno.test("every folder of src/ has a rank in the layout", () => {
  const folders = new Set(sourceFiles(SRC).map(folderOf));
  for (const folder of folders) {
    assert((RANKS as readonly string[]).includes(folder), `src/${folder} has no rank`);
  }
});

Deno.test("imports point one way: cli → channels → gateway → … → sandbox", () => {
  const violations: string[] = [];
  for (const file of sourceFiles(SRC)) {
    const from = folderOf(file);
    for (const specifier of importsOf(readFileSync(file, "utf8"))) {
      const target = resolve(dirname(file), specifier);
      if (!target.startsWith(SRC)) {
        violations.push(`${relative(SRC, file)} imports ${specifier}, outside src/`);
        continue;
      }
      const to = folderOf(target);
      const rankFrom = RANKS.indexOf(from as typeof RANKS[number]);
      const rankTo = RANKS.indexOf(to as typeof RANKS[number]);
      if (from !== to && rankTo >= rankFrom) {
        violations.push(`src/${relative(SRC, file)} (${from}) imports ${specifier} (${to})`);
      }
    }
  }
  assertEquals(violations, []);
});

Deno.test("the import scanner sees static, dynamic and re-exports", () => {
  const text = `import { a } from "../x/a.ts";\nexport * from "./b.ts";\n` +
    `const c = await import("../y/c.ts");\nimport "./d.ts";\nimport { e } from "node:fs";\n` +
    `new Worker(new URL("../w/worker.ts", import.meta.url));`;
  assertEquals(importsOf(text), ["../x/a.ts", "./b.ts", "../y/c.ts", "./d.ts", "../w/worker.ts"]);
});
