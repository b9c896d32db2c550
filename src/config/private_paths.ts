/**
 * Coop's own files — the config and the state directory (sessions, memory, pairing, budgets) —
 * must never be reachable from what a non-owner's tools see: their sandbox's workspace, and the
 * same directory as the file tools (which run in the gateway) resolve paths in.
 * @module
 */
import type { CoopConfig } from "./config.ts";
import { isInside } from "../sandbox/path_containment.ts";

/**
 * The first of Coop's own files that `dir` holds or lies within, or null.
 *
 * @example
 * ```ts
 * visiblePrivatePath(config, "/srv/ws/state"); // "/srv/ws/state" when that is the state dir
 * ```
 */
export function visiblePrivatePath(
  config: Pick<CoopConfig, "file" | "agent">,
  dir: string,
): string | null {
  for (const privatePath of [config.file, config.agent.stateDir]) {
    if (isInside(privatePath, dir) || isInside(dir, privatePath)) return privatePath;
  }
  return null;
}
