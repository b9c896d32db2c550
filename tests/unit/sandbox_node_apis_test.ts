/**
 * The sandbox library runs under Deno and Node (the `coop-sandbox` package), so its code uses
 * `node:*` APIs both have. Only the Deno FFI adapter may touch the `Deno` global; the runtime
 * is told apart in native_runtime.ts by `"Deno" in globalThis`, a string, not a use. A `Deno.`
 * call anywhere else works under `deno test` and breaks only under Node: this test finds it.
 * @module
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals } from "../assert.ts";

const SANDBOX = fileURLToPath(new URL("../../src/sandbox/", import.meta.url));

/** Files allowed to use the `Deno` global: the adapter loaded only when Deno runs the library. */
const DENO_ONLY = new Set(["ffi_deno.ts"]);

/** The identifier `Deno` (a use, `Deno.x`, `Deno[…]`, `typeof Deno`), not the string "Deno". */
const DENO_USE = /(?<![\w$"'`])Deno(?![\w$"'`])/;

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") ? [path] : [];
  });
}

/** Lines (1-based number, text) that use `Deno` outside comments. */
export function denoUses(text: string): [number, string][] {
  const found: [number, string][] = [];
  let inBlock = false;
  text.split("\n").forEach((line, index) => {
    let code = "";
    let rest = line;
    while (rest.length) {
      if (inBlock) {
        const end = rest.indexOf("*/");
        if (end < 0) break;
        inBlock = false;
        rest = rest.slice(end + 2);
        continue;
      }
      // A `//` after `:` is a URL inside a string (`https://`), not a comment.
      const comment = /(^|[^:])\/\//.exec(rest);
      const block = rest.indexOf("/*");
      const lineAt = comment ? comment.index + comment[1].length : -1;
      if (block >= 0 && (lineAt < 0 || block < lineAt)) {
        code += rest.slice(0, block);
        inBlock = true;
        rest = rest.slice(block + 2);
      } else {
        code += lineAt >= 0 ? rest.slice(0, lineAt) : rest;
        break;
      }
    }
    if (DENO_USE.test(code)) found.push([index + 1, line.trim()]);
  });
  return found;
}

Deno.test("sandbox library: the detector flags code and passes over comments and strings", () => {
  const sample = [
    "/**",
    " * Deno.readTextFileSync is what we used to call.",
    " */",
    "// Deno.pid in a comment",
    'const runtime = "Deno" in globalThis ? "deno" : "node";',
    "const pid = process.pid; // not Deno.pid",
    "/* Deno.kill */ const a = 1;",
    "const uid = Deno.uid();",
    "let info: Deno.FileInfo;",
    "const url = `https://x/${Deno.pid}`;",
    "const d = typeof Deno;",
  ].join("\n");
  assertEquals(denoUses(sample).map(([n]) => n), [8, 9, 10, 11]);
});

Deno.test("sandbox library: no Deno global outside the Deno FFI adapter (it must run under Node)", () => {
  const files = sourceFiles(SANDBOX);
  assert(files.length > 40, `expected the sandbox library's files in ${SANDBOX}`);
  const offending: string[] = [];
  for (const path of files) {
    const name = relative(SANDBOX, path);
    const uses = denoUses(readFileSync(path, "utf8"));
    if (DENO_ONLY.has(name)) {
      // The exception must still be needed; if the adapter stops using Deno, drop it.
      assert(uses.length > 0, `${name} no longer uses Deno: remove it from DENO_ONLY`);
      continue;
    }
    for (const [line, text] of uses) offending.push(`src/sandbox/${name}:${line}: ${text}`);
  }
  assertEquals(
    offending,
    [],
    "use node:* APIs both Deno and Node have (node:fs, node:child_process, node:process):\n" +
      offending.join("\n"),
  );
});

Deno.test("sandbox library: the Deno adapter is loaded only when Deno runs the library", () => {
  const selector = readFileSync(join(SANDBOX, "native_runtime.ts"), "utf8");
  assert(selector.includes('"Deno" in globalThis'), "native_runtime.ts detects Deno by its global");
  const importers = sourceFiles(SANDBOX)
    .filter((path) => /["']\.\/ffi_deno\.ts["']/.test(readFileSync(path, "utf8")))
    .map((path) => relative(SANDBOX, path));
  assertEquals(importers, ["native_runtime.ts"]);
});
