/**
 * Coop's public library API.
 *
 * @example
 * ```ts
 * import { exec } from "./mod.ts";
 * const r = await exec({ workspace: "/tmp/ws" }, ["echo", "hello"]);
 * ```
 * @module
 */
export * from "./src/sandbox/mod.ts";
