/**
 * The hash that ties a built base to the Coopfile it was built from (`BaseManifest.hash`):
 * when the Coopfile changes in a way that changes the base, the hash differs and Coop tells
 * the owner to `coop rebuild`.
 * @module
 */
import { createHash } from "node:crypto";
import type { Coopfile } from "./coopfile.ts";

/**
 * sha256 (hex) of what a base layer is built from: `[base]`, `[packages]`, `[setup]`,
 * `[agent] install` and `[env]`. Run-time-only keys (`[session]`, `[agent] command`), the
 * build's network and the files' paths do not change the result, so they are left out.
 */
export function coopfileHash(coopfile: Coopfile): string {
  const built = {
    base: coopfile.base,
    packages: coopfile.packages,
    setup: coopfile.setup,
    agentInstall: coopfile.agent.install,
    env: Object.fromEntries(Object.entries(coopfile.env).sort(([a], [b]) => a < b ? -1 : 1)),
  };
  return createHash("sha256").update(JSON.stringify(built)).digest("hex");
}
