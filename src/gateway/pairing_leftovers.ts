/**
 * What a name still holds after its person left: `coop pairing remove` and a `[[users]]` entry
 * taken out of coop.toml forget the person, not their workspace directory nor the memories that
 * name them. A newcomer given that name would read them as their own, so a derived name skips
 * such names (pairing_approval.ts).
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import type { MemoryDatabase } from "../state/memory_store.ts";

/**
 * Whether `name` still has someone's data: a workspace directory of that name, or memories
 * written by or kept for that name.
 *
 * @example
 * ```ts
 * const hasData = leftoverData(config.agent.workspace, new MemoryDatabase(db));
 * hasData("dave"); // true while /srv/ws/dave or dave's memories exist
 * ```
 */
export function leftoverData(
  workspace: string,
  memories: MemoryDatabase,
): (name: string) => boolean {
  return (name) => existsSync(join(workspace, name)) || memories.list({ user: name }).length > 0;
}
