/**
 * `deno task compile`: one executable, `build/coop`, that embeds the sandbox library. At run
 * time the library is loaded from the executable's own bytes through a sealed memfd and
 * checked against the digests recorded here (src/sandbox/embedded_library.ts).
 *
 * `deno compile` needs the matching `denort` runtime: it downloads it unless `DENORT_BIN`
 * names a local copy (docs/decisions.md). Worker modules are not found by deno compile's
 * static analysis, so they are listed with `--include`. The V8 flags of `scripts/runtime.env` are
 * built into the executable; its malloc settings are read by glibc before any code runs, so the
 * service that starts `build/coop` sets them (docs/decisions.md "Runtime flags").
 * @module
 */
import { spawnSync } from "node:child_process";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { hashSources } from "../src/sandbox/source_hash.ts";
import { entrySource, libraryModuleSource, recordOf } from "./embed_library.ts";
import { readRuntimeEnv } from "./runtime_env.ts";

const root = fileURLToPath(new URL("..", import.meta.url));
const out = `${root}build/compile`;
/** Modules loaded only by `new Worker()` or by a worker's dynamic import (off_loop.ts). */
export const WORKER_MODULES = [
  "src/sandbox/off_loop_worker.ts",
  "src/sandbox/protected_paths.ts",
  "src/workspace/workspace_scan.ts",
];

const bytes = await readFile(`${root}build/libcoop_sandbox.so`);
const record = recordOf(bytes, await hashSources(`${root}ffi`));
await mkdir(out, { recursive: true });
await writeFile(`${out}/library_bytes.ts`, libraryModuleSource(record));
await writeFile(
  `${out}/main.ts`,
  entrySource("../../src/sandbox", "../../src/cli/main.ts", "main"),
);
const { DENO_V8_FLAGS: v8Flags, ...processEnv } = readRuntimeEnv();
const args = [
  "compile",
  "--allow-all",
  "--no-check",
  ...(v8Flags ? [`--v8-flags=${v8Flags}`] : []),
  ...WORKER_MODULES.flatMap((module) => ["--include", `${root}${module}`]),
  "--output",
  `${root}build/coop`,
  `${out}/main.ts`,
];
console.error(
  `compile: library ${record.sha256!.slice(0, 12)}, sources ${record.sourceHash!.slice(0, 12)}`,
);
const result = spawnSync(process.execPath, args, { stdio: "inherit" });
if (result.status !== 0) {
  console.error(
    "compile: deno compile failed. It needs its runtime (denort) for this platform: without " +
      "network access, set DENORT_BIN to a denort binary of the same Deno version.",
  );
  process.exit(1);
}
console.error(`compile: wrote ${root}build/coop`);
const unset = Object.entries(processEnv).map(([name, value]) => `${name}=${value}`).join(" ");
if (unset) {
  console.error(`compile: set ${unset} in the environment that starts it (scripts/runtime.env)`);
}
