/**
 * Whose writing a file the owner's tools read is: the workspace holds every non-owner's
 * directory (`<workspace>/<name>`, `shared`, `group-…`), and what a sandboxed person wrote there
 * can carry instructions — the same injection as a planted memory (ATTACKS P14). The owner's
 * `read_file` of such a file makes its writers contributors of the turn (`TurnTaint.readFile`).
 * @module
 */
import { realpathSync } from "node:fs";
import { isAbsolute, join, relative, sep } from "node:path";
import type { CoopConfig } from "../config/config.ts";
import { SHARED_SCOPE_NAME } from "../config/user_directories.ts";
import { GROUP_DIRECTORY_PREFIX } from "../config/user_name.ts";
import { isInside } from "../sandbox/path_containment.ts";
import { atLeast, leastTrusted, type TrustLevel } from "../trust/trust_level.ts";

/** A person as far as provenance goes: configured or paired. */
export type Person = { readonly name: string; readonly trust: TrustLevel };

/** Who may have written a file: a person, or the people of a shared or group directory. */
export interface FileWriters {
  /** A person's name, `shared`, or the group directory's name. */
  name: string;
  /** The least trusted of them (their trust caps what the text may make the turn do). */
  trust: TrustLevel;
}

/** The least trusted of those who can write files (`inner` or more, never the owner). */
function leastTrustedWriter(people: readonly Person[]): TrustLevel {
  const writers = people.filter((u) => u.trust !== "owner" && atLeast(u.trust, "inner"));
  return writers.length ? leastTrusted(writers[0].trust, ...writers.map((u) => u.trust)) : "inner";
}

/**
 * Who may have written `path` (as the owner's tool was given it, relative to the workspace or
 * absolute), or null when it is the owner's own: a configured or `paired` person's directory,
 * the shared one, or a group chat's (whose writers are at most `inner` as far as Coop can tell
 * from the name alone). Symlinks are followed: a link of the owner's into Bob's directory reads
 * Bob's file.
 */
export function fileWriters(
  config: CoopConfig,
  path: string,
  paired: () => readonly Person[],
): FileWriters | null {
  const workspace = config.agent.workspace;
  const given = isAbsolute(path) ? path : join(workspace, path);
  let real = given;
  try {
    real = realpathSync(given);
  } catch {
    // Not there (the read failed anyway): judge the path as given.
  }
  const root = realpathOr(workspace);
  if (real === root || !isInside(real, root)) return null;
  const first = relative(root, real).split(sep)[0];
  if (first.startsWith(GROUP_DIRECTORY_PREFIX)) return { name: first, trust: "inner" };
  if (config.sandbox.workspaceScope === "shared") {
    return first === SHARED_SCOPE_NAME
      ? { name: first, trust: leastTrustedWriter([...config.users, ...paired()]) }
      : null;
  }
  const person = config.users.find((u) => u.name === first) ??
    paired().find((u) => u.name === first);
  if (!person || person.trust === "owner") return null;
  return { name: person.name, trust: person.trust };
}

function realpathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}
