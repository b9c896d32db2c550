/**
 * Paths given on the command line (`--config`, `--workspace`) mean what the caller sees:
 * relative ones resolve against the directory `coop` was run from (`./coop` stays there), and
 * every message names the absolute path that was tried.
 * @module
 */
import { resolve } from "node:path";

/**
 * The absolute path `path` names from the caller's directory.
 *
 * @example
 * ```ts
 * callerPath("coop.toml"); // e.g. "/home/me/coop.toml" when run from /home/me
 * ```
 */
export function callerPath(path: string): string {
  return resolve(Deno.cwd(), path);
}
