/**
 * The runtime settings of the Coop process (`scripts/runtime.env`): the one place ./coop,
 * `deno task coop` and `deno task compile` take V8 flags and the malloc environment from.
 * @module
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

/** The file ./coop and the `coop` task source with `sh` (`set -a; . scripts/runtime.env`). */
export const RUNTIME_ENV_FILE = fileURLToPath(new URL("runtime.env", import.meta.url));

/** `NAME=value` lines of `scripts/runtime.env` (comments and blank lines skipped). */
export function readRuntimeEnv(path = RUNTIME_ENV_FILE): Record<string, string> {
  const env: Record<string, string> = {};
  for (const line of readFileSync(path, "utf8").split("\n")) {
    const text = line.trim();
    if (text === "" || text.startsWith("#")) continue;
    const match = /^([A-Z_][A-Z0-9_]*)=(\S*)$/.exec(text);
    if (!match) throw new Error(`${path}: expected NAME=value without spaces or quotes: ${text}`);
    env[match[1]] = match[2];
  }
  return env;
}
