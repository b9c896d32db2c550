/**
 * Routing outside a running gateway (`coop explain`, `coop run`, `coop shell`): the same
 * `routeSender` the gateway uses, with the paired people read from the state directory — so a
 * person approved with `coop pairing approve` is seen as the gateway then routes them.
 * @module
 */
import type { CoopConfig, UserConfig } from "../config/config.ts";
import { CoopError } from "../errors/coop_error.ts";
import { readPairedPeople } from "../state/paired_people_reader.ts";
import { pairedAsUsers } from "./pairing_approval.ts";
import { type MessageOrigin, type PairedUsers, type Route, routeSender } from "./router.ts";

/** The paired people cannot be read (a damaged state database): nothing is routed without them. */
export class PairedPeopleError extends CoopError {
  constructor(message: string) {
    super("pairing.unreadable", message);
    this.name = "PairedPeopleError";
  }
}

/**
 * The paired people of `config`'s state directory as the router's users (read-only: nothing is
 * created). Throws `PairedPeopleError` when the database cannot be read — fail closed, since a
 * route without them would show a paired person as public.
 */
export function readPairedUsers(config: CoopConfig): UserConfig[] {
  const people = readPairedPeople(config.agent.stateDir);
  if ("problem" in people) throw new PairedPeopleError(people.problem);
  return pairedAsUsers(people, config);
}

/** Who `origin` is, exactly as the gateway routes a message of theirs (paired people included). */
export function routeWithPaired(
  config: CoopConfig,
  origin: MessageOrigin,
  paired: PairedUsers = readPairedUsers(config),
): Route {
  return routeSender(config, origin, paired);
}

/** The configured user named `name`, else the paired person of that name. */
export function personNamed(
  config: CoopConfig,
  name: string,
  paired: PairedUsers,
): UserConfig | undefined {
  return config.users.find((u) => u.name === name) ?? paired.find((u) => u.name === name);
}
