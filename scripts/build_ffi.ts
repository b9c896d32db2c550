/**
 * Builds the sandbox trampoline: the static pid-1 init, then the shared object that embeds
 * it. Skips the work when build/ already holds a library of the current sources.
 *
 * Usage: deno task build:ffi [--force] [--disable LAYER]...
 *
 * `--disable LAYER` makes a debug build without one protection (seccomp, landlock,
 * capabilities, no-new-privs, netns, pidns, close-fds) in build/debug-LAYER/, for the tests
 * that prove each layer is load-bearing. The loader refuses such a library unless
 * COOP_ALLOW_DEBUG_LIBRARY=1.
 */
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { hashSources } from "../src/sandbox/source_hash.ts";

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
  args: Deno.args,
  options: { force: { type: "boolean" }, disable: { type: "string", multiple: true } },
});
const disabled = (options.disable ?? []).sort();
for (const layer of disabled) {
  if (!LAYERS.includes(layer)) {
    console.error(`build:ffi: unknown layer "${layer}" (known: ${LAYERS.join(", ")})`);
    Deno.exit(2);
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

async function run(cmd: string, args: string[]): Promise<void> {
  const { code, stderr } = await new Deno.Command(cmd, { args, stderr: "piped" }).output();
  if (code !== 0) {
    console.error(new TextDecoder().decode(stderr));
    console.error(`build:ffi: ${cmd} failed (exit ${code})`);
    Deno.exit(1);
  }
}

const hash = await hashSources(ffi);
const force = options.force ?? false;
const current = await Deno.readTextFile(stamp).catch(() => "");
const built = await Deno.stat(library).then(() => true, () => false);
if (!force && built && current.trim() === hash) Deno.exit(0);

await Deno.mkdir(build, { recursive: true });
const warnings = ["-Wall", "-Wextra", "-Werror"];
const initSources: string[] = [];
for await (const entry of Deno.readDir(`${ffi}/init`)) {
  if (entry.name.endsWith(".c")) initSources.push(`${ffi}/init/${entry.name}`);
}
// No libc in the init: it is exec'd from a memfd inside an empty root, and must not depend
// on anything there.
await run("gcc", [
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
await run("gcc", [
  ...warnings,
  "-O2",
  "-shared",
  "-fPIC",
  `-DCOOP_SOURCE_HASH="${hash}"`,
  ...defines,
  `-I${build}`,
  "-o",
  `${library}.tmp`,
  `${ffi}/spawn.c`,
  `${ffi}/cgroup.c`,
  `${ffi}/drain.c`,
  `${ffi}/beneath.c`,
  `${ffi}/dir_list.c`,
  `${ffi}/relay.c`,
  `${ffi}/init_blob.S`,
  "-pthread",
]);
await Deno.rename(`${library}.tmp`, library);
await Deno.writeTextFile(stamp, `${hash}\n`);
console.error(`build:ffi: built ${library} (${hash.slice(0, 12)})`);
