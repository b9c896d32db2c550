/**
 * `coop check`'s account of who the router knows: configured users beside the people paired
 * with `coop pairing approve` (read from the state database without changing it).
 * @module
 */
import type { CoopConfig } from "../config/config.ts";
import { type ConfigDiagnostic, configWarning } from "../config/config_diagnostic.ts";
import { pairedUser } from "../gateway/pairing_approval.ts";
import { readPairedPeople } from "../state/paired_people_reader.ts";

/** Who the router knows: `[[users]]` and the paired people of the state database. */
export interface CheckPeople {
  /** `[[users]]`: name, trust, match patterns. */
  users: { name: string; trust: string; match: readonly string[] }[];
  /** Paired people: name, trust, address; an object naming the problem when unreadable. */
  paired:
    | { name: string; trust: string; match: readonly string[]; approvedAt: string }[]
    | { problem: string };
}

/** Reads who the router knows for `coop check`. */
export function checkPeople(config: CoopConfig): CheckPeople {
  const read = readPairedPeople(config.agent.stateDir);
  return {
    users: config.users.map(({ name, trust, match }) => ({ name, trust, match })),
    paired: Array.isArray(read)
      ? read.map((p) => ({
        name: p.name,
        trust: p.trust,
        match: pairedUser(p).match,
        approvedAt: new Date(p.approvedAt).toISOString(),
      }))
      : read,
  };
}

/** The report's `users:` and `paired:` lines. */
export function peopleLines(found: CheckPeople): string[] {
  const show = (list: { name: string; trust: string; match: readonly string[] }[]) =>
    list.map((u) => `${u.name} (${u.trust}${u.match.length ? `, ${u.match.join(" ")}` : ""})`)
      .join("; ") || "none";
  return [
    `users: ${show(found.users)}`,
    Array.isArray(found.paired)
      ? `paired: ${show(found.paired)}`
      : `paired: unknown — ${found.paired.problem}`,
  ];
}

/**
 * Warnings about paired people the config now overrides: a configured user of the same name (it
 * wins, and the paired person is no longer recognised) or an exact pattern of theirs (the
 * configured user wins for that address), and a state database that could not be read.
 */
export function pairedWarnings(config: CoopConfig, found: CheckPeople): ConfigDiagnostic[] {
  if (!Array.isArray(found.paired)) {
    return [configWarning("config.paired_unreadable", "agent.state_dir", found.paired.problem)];
  }
  const out: ConfigDiagnostic[] = [];
  for (const person of found.paired) {
    const i = config.users.findIndex((u) => u.name === person.name);
    if (i >= 0) {
      out.push(configWarning(
        "config.paired_name_taken",
        `users[${i}].name`,
        `"${person.name}" is also a paired person (${person.match.join(" ")}), who is no longer ` +
          "recognised: the configured user wins; rename one of them",
      ));
    }
    config.users.forEach((user, u) =>
      user.match.forEach((pattern, j) => {
        if (u !== i && person.match.includes(pattern)) {
          out.push(configWarning(
            "config.paired_shadowed",
            `users[${u}].match[${j}]`,
            `"${pattern}" is also paired person "${person.name}"'s address; the configured user ` +
              `"${user.name}" wins for it`,
          ));
        }
      })
    );
  }
  return out;
}
