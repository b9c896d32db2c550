/**
 * Approving and denying pairing requests, the same for `coop pairing approve|deny` and for the
 * owner's `/approve` and `/deny` in a chat: the code checked, the trust (never `owner`), the name
 * (given or derived from the sender's display name) validated like a config user name.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { CoopConfig, UserConfig } from "../config/config.ts";
import type { Budget } from "../config/budget_settings.ts";
import { userNameProblem } from "../config/user_name.ts";
import { normalizePairingCode, PAIRING_CODE_LENGTH } from "../state/pairing_code.ts";
import {
  type PairedPerson,
  PairingError,
  type PairingIdentity,
  type PairingRequest,
  type PairingStore,
  unknownCode,
} from "../state/pairing_store.ts";
import { isTrustLevel, TRUST_LEVELS, type TrustLevel } from "../trust/trust_level.ts";

const log = getLogger(["coop", "pairing"]);

/** The trust a paired person gets unless the owner says otherwise. */
export const DEFAULT_PAIRED_TRUST: TrustLevel = "familiar";

/** What the owner may say beside the code. */
export interface ApproveOptions {
  /** The person's user name; default: derived from their display name. */
  name?: string;
  /** Their trust; default `familiar`; `owner` is refused. */
  trust?: string;
  /**
   * Whether a name still holds someone's data (`leftoverData`): a derived name skips it, so a
   * stranger called Dave never inherits the Dave removed before. A `name` given is the owner's.
   */
  hasData?: (name: string) => boolean;
}

function code(typed: string): string {
  const symbols = normalizePairingCode(typed);
  if (symbols === null) {
    throw new PairingError(
      "pairing.invalid_code",
      `"${typed}" is not a pairing code: it has ${PAIRING_CODE_LENGTH} letters and digits, ` +
        "like ABCD-EFGH",
    );
  }
  return symbols;
}

function trustOf(typed: string | undefined): TrustLevel {
  if (typed === undefined) return DEFAULT_PAIRED_TRUST;
  if (!isTrustLevel(typed)) {
    throw new PairingError(
      "pairing.invalid_trust",
      `unknown trust "${typed}"; use one of ${
        TRUST_LEVELS.filter((t) => t !== "owner").join(", ")
      }`,
    );
  }
  if (typed === "owner") {
    throw new PairingError(
      "pairing.owner_refused",
      'pairing never gives "owner" trust (the owner runs commands on the host, unsandboxed); ' +
        "approve at full at most, or name the owner in coop.toml's [[users]]",
    );
  }
  return typed;
}

/**
 * A user name for a newcomer: their display name in lowercase letters, digits and dashes, or
 * `<channel>-<last digits of their id>`, with `-2`, `-3` … when taken or still holding the data
 * of someone before (`hasData`).
 */
export function derivePersonName(
  who: PairingIdentity,
  taken: ReadonlySet<string>,
  hasData: (name: string) => boolean = () => false,
): string {
  const fromName = (who.senderName ?? "").normalize("NFKD").replace(/[\u0300-\u036f]/g, "")
    .toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^[^a-z]+/, "").replace(/-+$/, "")
    .slice(0, 24).replace(/-+$/, "");
  const fromId = `${who.channel}-${
    who.sender.replace(/[^A-Za-z0-9]/g, "").slice(-8).toLowerCase()
  }`;
  const base = fromName && userNameProblem(fromName) === null ? fromName : fromId;
  for (let n = 1;; n++) {
    const name = n === 1 ? base : `${base}-${n}`;
    if (!taken.has(name) && userNameProblem(name) === null && !hasData(name)) return name;
  }
}

/** Names no new paired person may take: configured users' and paired people's. */
function takenNames(store: PairingStore, users: readonly UserConfig[]): Set<string> {
  return new Set([...users.map((u) => u.name), ...store.people().map((p) => p.name)]);
}

/**
 * Approves the request of `typedCode`: the sender becomes a paired person (for the next message,
 * no restart). Throws `PairingError` for a malformed or unknown code, a bad or `owner` trust, and
 * a name that is invalid or taken by a configured user or a paired person.
 */
export function approvePairing(
  store: PairingStore,
  users: readonly UserConfig[],
  typedCode: string,
  options: ApproveOptions = {},
  now: number = Date.now(),
): PairedPerson {
  const symbols = code(typedCode);
  const trust = trustOf(options.trust);
  const request = store.pendingByCode(symbols, now);
  if (!request) throw unknownCode(typedCode);
  const taken = takenNames(store, users);
  let name = options.name;
  if (name === undefined) name = derivePersonName(request, taken, options.hasData);
  else {
    const problem = userNameProblem(name);
    if (problem) throw new PairingError("pairing.invalid_name", `--name ${problem}`);
    if (taken.has(name)) {
      throw new PairingError(
        "pairing.name_taken",
        `"${name}" is already the name of a configured user or a paired person; choose another`,
      );
    }
  }
  const person = store.approve(symbols, { name, trust }, now);
  log.info("pairing.approved {name} {channel}:{sender} at {trust}", {
    event: "pairing.approved",
    name,
    trust,
    channel: person.channel,
    sender: person.sender,
  });
  return person;
}

/**
 * Denies the request of `typedCode`: its code stops working, and its sender stays unknown and
 * hears nothing more until the request would have expired.
 */
export function denyPairing(
  store: PairingStore,
  typedCode: string,
  now = Date.now(),
): PairingRequest {
  const request = store.deny(code(typedCode), now);
  log.info("pairing.denied {channel}:{sender}", {
    event: "pairing.denied",
    channel: request.channel,
    sender: request.sender,
  });
  return request;
}

/**
 * A paired person as the router sees them: a user whose patterns are their exact addresses, with
 * `[pairing.budget]` as their own budget.
 */
export function pairedUser(person: PairedPerson, budget?: Budget): UserConfig {
  return {
    name: person.name,
    trust: person.trust,
    match: [person.sender, ...person.aliases].map((id) => `${person.channel}:${id}`),
    sandbox: {},
    ...(budget ? { budget } : {}),
  };
}

/**
 * The paired people as users for the router. One whose name a configured user has taken since is
 * left out: they would share that user's sessions and workspace (`coop check` warns about it).
 */
export function pairedUsers(
  store: PairingStore,
  config: Pick<CoopConfig, "users" | "pairing">,
): UserConfig[] {
  return pairedAsUsers(store.people(), config);
}

/** `people` as users for the router, less those whose name a configured user has taken. */
export function pairedAsUsers(
  people: readonly PairedPerson[],
  config: Pick<CoopConfig, "users" | "pairing">,
): UserConfig[] {
  return people.filter((p) => !config.users.some((u) => u.name === p.name))
    .map((p) => pairedUser(p, config.pairing.budget));
}
