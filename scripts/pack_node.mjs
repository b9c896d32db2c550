// `npm run pack:node`: builds the coop-sandbox npm package from the sandbox library and writes
// coop-sandbox-<version>.tgz to the repository root. Needs only Node, npm and gcc (no Deno).
//
// Steps: TypeScript → ES modules + .d.ts (typescript from npm/toolchain, docs/decisions.md),
// the C sources copied beside them, the library built by the compiled build script for this
// machine (shipped; install.mjs rebuilds it on a machine of another platform), then `npm pack`.
import { execFileSync } from "node:child_process";
import {
  cpSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const toolchain = join(root, "npm/toolchain");
const source = join(root, "npm/coop-sandbox");
const out = join(root, "build/npm/package");
const quiet = ["--no-audit", "--no-fund", "--loglevel=error"];

function run(cmd, args, options = {}) {
  return String(
    execFileSync(cmd, args, { stdio: ["ignore", "pipe", "inherit"], ...options }) ?? "",
  );
}

if (!existsSync(join(toolchain, "node_modules/.bin/tsc"))) {
  console.error("pack:node: installing the TypeScript compiler into npm/toolchain (first run)…");
  run("npm", ["install", "--prefix", toolchain, "--no-package-lock", ...quiet]);
}
rmSync(out, { recursive: true, force: true });
run(join(toolchain, "node_modules/.bin/tsc"), ["-p", join(source, "tsconfig.json")]);

// Declarations keep the sources' `.ts` specifiers; consumers resolve the `.js` files beside
// them, so point the types at those names too.
function rewriteDeclarations(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) rewriteDeclarations(path);
    else if (entry.name.endsWith(".d.ts")) {
      const text = readFileSync(path, "utf8");
      writeFileSync(path, text.replace(/(["'])(\.\.?\/[^"']+)\.ts\1/g, "$1$2.js$1"));
    }
  }
}
rewriteDeclarations(out);

cpSync(join(root, "ffi"), join(out, "ffi"), { recursive: true });
for (const file of ["package.json", "README.md", "install.mjs"]) {
  cpSync(join(source, file), join(out, file));
}
// The library, built from the copied sources by the package's own (compiled) build script,
// exactly as an install on another platform would; the loader checks its source hash.
run(process.execPath, [join(out, "scripts/build_ffi.js"), "--force"], { stdio: "inherit" });
mkdirSync(join(out, "build"), { recursive: true });
writeFileSync(join(out, "build/libcoop_sandbox.target"), `${process.platform}-${process.arch}\n`);

const tarball = run("npm", ["pack", "--pack-destination", root, ...quiet], { cwd: out }).trim();
console.log(join(root, tarball.split("\n").pop()));
