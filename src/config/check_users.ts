/**
 * `coop check`: who is who — users (names, match patterns, owners) and groups.
 * @module
 */
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError, configWarning } from "./config_diagnostic.ts";
import { isWildcardPattern } from "../trust/match_pattern.ts";
import { USER_NAME_PATTERN, userNameProblem } from "./user_name.ts";

/** Duplicate and reserved names, match patterns shared or too wide, owners. */
export function checkUsers(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const seenNames = new Map<string, number>();
  const patternOwner = new Map<string, number>();
  config.users.forEach((user, i) => {
    const previous = seenNames.get(user.name);
    if (previous !== undefined) {
      out.push(configError(
        "config.duplicate_user",
        `users[${i}].name`,
        `user "${user.name}" is already defined at users[${previous}]`,
      ));
    } else seenNames.set(user.name, i);
    // The pattern itself is the schema's; what is left are names taken by Coop.
    const reserved = USER_NAME_PATTERN.test(user.name) ? userNameProblem(user.name) : null;
    if (reserved) out.push(configError("config.reserved_user_name", `users[${i}].name`, reserved));
    const ownPatterns = new Set<string>();
    user.match.forEach((pattern, j) => {
      const path = `users[${i}].match[${j}]`;
      if (ownPatterns.has(pattern)) {
        out.push(configWarning("config.duplicate_match", path, `"${pattern}" is listed twice`));
        return;
      }
      ownPatterns.add(pattern);
      const other = patternOwner.get(pattern);
      if (other !== undefined) {
        out.push(configError(
          "config.duplicate_match",
          path,
          `"${pattern}" also matches user "${config.users[other].name}"; a sender must map to ` +
            "exactly one user",
        ));
      } else patternOwner.set(pattern, i);
      if (isWildcardPattern(pattern) && (user.trust === "owner" || user.trust === "full")) {
        out.push(configError(
          "config.wildcard_trust",
          path,
          `"${pattern}" would give every sender on that channel ${user.trust} trust`,
        ));
      }
    });
  });
  const owners = config.users.filter((u) => u.trust === "owner");
  // The issue lists "more than one owner" both as a warning and among the configs that must
  // fail; it fails here: the owner is the one person whose commands run unsandboxed on the
  // host, and a second owner is almost always a trust level typed by mistake.
  if (owners.length > 1) {
    out.push(configError(
      "config.multiple_owners",
      "users",
      `${owners.length} users have trust "owner" (${
        owners.map((u) => u.name).join(", ")
      }); only one person may run bash on the host, unsandboxed — give the others "full"`,
    ));
  }
  if (config.sandbox.enabled && owners.length === 0) {
    out.push(configWarning(
      "config.no_owner",
      "users",
      'the sandbox is enabled but no user has trust "owner"; only the terminal default is owner',
    ));
  }
}

/**
 * A group pattern listed by two groups, two groups of one name (they would share a workspace
 * directory), a ceiling of `owner` (the owner in a group is sandboxed: DESIGN §1).
 */
export function checkGroups(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const seen = new Map<string, number>();
  const names = new Map<string, number>();
  config.groups.forEach((group, i) => {
    if (group.ceiling === "owner") {
      out.push(configError(
        "config.group_owner_ceiling",
        `groups[${i}].trust`,
        'a group\'s ceiling cannot be "owner": in a group everyone, the owner too, works in the ' +
          'sandbox; use "full" at most',
      ));
    }
    const other = group.name === undefined ? undefined : names.get(group.name);
    if (other !== undefined) {
      out.push(configError(
        "config.duplicate_group_name",
        `groups[${i}].name`,
        `"${group.name}" is already the name of groups[${other}]; a group's name is its ` +
          "workspace directory, so two groups would share one",
      ));
    } else if (group.name !== undefined) names.set(group.name, i);
    group.match.forEach((pattern, j) => {
      const other = seen.get(pattern);
      if (other !== undefined) {
        out.push(configError(
          "config.duplicate_match",
          `groups[${i}].match[${j}]`,
          `"${pattern}" is already matched by groups[${other}]`,
        ));
      } else seen.set(pattern, i);
    });
  });
}
