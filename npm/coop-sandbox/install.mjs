#!/usr/bin/env node
// Makes the sandbox library fit this machine: the package ships one built for the platform it
// was packed on; on any other Linux platform this builds it from the shipped C sources with
// gcc. Runs as the package's install script, or by hand as `npx coop-sandbox-build` where
// install scripts are not allowed. macOS needs no library (sandbox-exec or apple/container).
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import process from "node:process";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
if (process.platform !== "linux") process.exit(0);
const target = `${process.platform}-${process.arch}`;
let shipped = "";
try {
  shipped = readFileSync(join(here, "build/libcoop_sandbox.target"), "utf8").trim();
} catch {
  // none shipped: build
}
const force = process.argv.includes("--force");
if (shipped === target && !force) process.exit(0);
const build = spawnSync(process.execPath, [join(here, "scripts/build_ffi.js"), "--force"], {
  stdio: "inherit",
});
if (build.status !== 0) {
  console.error(
    `coop-sandbox: cannot build the sandbox library for ${target} (the shipped one is for ` +
      `${shipped || "no platform"}); install gcc and run \`npx coop-sandbox-build\``,
  );
  process.exit(1);
}
