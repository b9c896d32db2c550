/**
 * Builds the sandbox trampoline: the static pid-1 init, then the shared object that embeds
 * it. Skips the work when build/ already holds a library of the current sources.
 *
 * Usage: deno task build:ffi [--force] [--disable LAYER]...
 * It uses only `node:*` APIs: the npm package runs the same file, compiled, under Node.
 *
 * `--disable LAYER` makes a debug build without one protection (seccomp, landlock,
 * capabilities, no-new-privs, netns, pidns, close-fds) in build/debug-LAYER/, for the tests
 * that prove each layer is load-bearing. The loader refuses such a library unless
 * COOP_ALLOW_DEBUG_LIBRARY=1.
 */
import { spawnSync } from "node:child_process";
import { mkdir, readdir, readFile, rename, stat, writeFile } from "node:fs/promises";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { hashSources } from "../src/sandbox/source_hash.ts";
import { LIBRARY_SOURCES } from "./ffi_sources.ts";

const LAYERS = [
  "seccomp",
  "landlock",
  "capabilities",
  "no-new-privs",
  "netns",
  "pidns",
  "close-fds",
];
const { values: options } = parseArgs({
  args: process.argv.slice(2),
  options: { force: { type: "boolean" }, disable: { type: "string", multiple: true } },
});
const disabled = (options.disable ?? []).sort();
for (const layer of disabled) {
  if (!LAYERS.includes(layer)) {
    console.error(`build:ffi: unknown layer "${layer}" (known: ${LAYERS.join(", ")})`);
    process.exit(2);
  }
}

const root = fileURLToPath(new URL("..", import.meta.url));
const ffi = `${root}ffi`;
const build = disabled.length ? `${root}build/debug-${disabled.join("+")}` : `${root}build`;
const library = `${build}/libcoop_sandbox.so`;
const stamp = `${build}/libcoop_sandbox.hash`;
const defines = disabled.map((layer) =>
  `-DCOOP_DISABLE_${layer.toUpperCase().replaceAll("-", "_")}`
);

function run(cmd: string, args: string[]): void {
  const { status, stderr, error } = spawnSync(cmd, args, { stdio: ["ignore", "inherit", "pipe"] });
  if (status !== 0) {
    console.error(stderr?.toString() ?? "");
    console.error(`build:ffi: ${cmd} failed (${error ? error.message : `exit ${status}`})`);
    process.exit(1);
  }
}

const hash = await hashSources(ffi);
/**
 * Changes when the way the library is linked does (its C sources are in `hash`), so that a
 * checkout rebuilds a library linked the old way: 2 = `-z nodelete`.
 */
const RECIPE = 2;
const force = options.force ?? false;
const current = await readFile(stamp, "utf8").catch(() => "");
const built = await stat(library).then(() => true, () => false);
if (!force && built && current.trim() === `${hash} ${RECIPE}`) process.exit(0);

await mkdir(build, { recursive: true });
const warnings = ["-Wall", "-Wextra", "-Werror"];
const initSources: string[] = [];
for (const name of await readdir(`${ffi}/init`)) {
  if (name.endsWith(".c")) initSources.push(`${ffi}/init/${name}`);
}
// No libc in the init: it is exec'd from a memfd inside an empty root, and must not depend
// on anything there.
run("gcc", [
  ...warnings,
  "-O2",
  "-static",
  "-nostdlib",
  "-fno-pie",
  "-no-pie",
  "-ffreestanding",
  "-fno-builtin",
  "-fno-stack-protector",
  "-fno-asynchronous-unwind-tables",
  "-Wl,--build-id=none",
  ...defines,
  "-o",
  `${build}/coop-init`,
  ...initSources.sort(),
]);
run("gcc", [
  ...warnings,
  "-O2",
  "-shared",
  "-fPIC",
  // Never unmapped once loaded: a realm that ends (a test module, a Worker) closes its handle,
  // while a nonblocking call (`coop_syncfs`) may still run in the library on a runtime thread.
  "-Wl,-z,nodelete",
  `-DCOOP_SOURCE_HASH="${hash}"`,
  ...defines,
  `-I${build}`,
  "-o",
  `${library}.tmp`,
  ...LIBRARY_SOURCES.map((source) => `${ffi}/${source}`),
  "-pthread",
]);
await rename(`${library}.tmp`, library);
await writeFile(stamp, `${hash} ${RECIPE}\n`);
console.error(`build:ffi: built ${library} (${hash.slice(0, 12)})`);
