/**
 * `coop check`'s account of who the router knows: configured users beside the people paired
 * with `coop pairing approve` (read from the state database without changing it).
 * @module
 */
import type { CoopConfig } from "../config/config.ts";
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
