/**
 * Pairing in the state database: requests of unknown senders waiting for the owner (only a hash
 * of each code is kept) and the people approved from them. `coop start` and `coop pairing` open
 * the same database (WAL): an approval made by the CLI is read by the gateway's next message.
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { CoopError } from "../errors/coop_error.ts";
import { isTrustLevel, type TrustLevel } from "../trust/trust_level.ts";
import { formatPairingCode, hashPairingCode, normalizePairingCode } from "./pairing_code.ts";

/** Someone who wrote to the agent, as their channel identifies them. */
export interface PairingIdentity {
  /** E.g. `telegram`. */
  channel: string;
  /** Their id on it, e.g. `123456789`. */
  sender: string;
  /** Other ids of the same person on that channel (signal-cli's number and uuid). */
  aliases: readonly string[];
  /** Their display name as the channel reported it, if any (they chose it: untrusted). */
  senderName?: string;
}

/** A request waiting for the owner. */
export interface PairingRequest extends PairingIdentity {
  /** Row id. */
  id: number;
  /** When it was made, ms since the epoch. */
  createdAt: number;
  /** When its code stops working. */
  expiresAt: number;
  /** When its code was last sent to the requester. */
  lastSentAt: number;
  /** The owner denied it: its code no longer works, its sender is not answered until it expires. */
  denied: boolean;
}

/** A person approved by the owner: an extra user for the router. */
export interface PairedPerson extends PairingIdentity {
  /** Their user name (sessions, workspace directory). */
  name: string;
  trust: TrustLevel;
  /** When the owner approved them. */
  approvedAt: number;
}

/** A pairing operation that cannot be done, with a stable code. */
export class PairingError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "PairingError";
  }
}

interface RequestRow {
  id: number;
  channel: string;
  sender: string;
  aliases: string;
  sender_name: string | null;
  created_at: number;
  expires_at: number;
  last_sent_at: number;
  denied: number;
}

interface PersonRow {
  name: string;
  trust: string;
  channel: string;
  sender: string;
  aliases: string;
  sender_name: string | null;
  approved_at: number;
}

function identity(row: RequestRow | PersonRow): PairingIdentity {
  return {
    channel: row.channel,
    sender: row.sender,
    aliases: JSON.parse(row.aliases) as string[],
    ...(row.sender_name === null ? {} : { senderName: row.sender_name }),
  };
}

function toRequest(row: RequestRow): PairingRequest {
  return {
    id: row.id,
    ...identity(row),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    lastSentAt: row.last_sent_at,
    denied: row.denied !== 0,
  };
}

function toPerson(row: PersonRow): PairedPerson {
  if (!isTrustLevel(row.trust)) {
    throw new PairingError(
      "pairing.corrupt_row",
      `paired person "${row.name}" has an unknown trust "${row.trust}"`,
    );
  }
  return { name: row.name, trust: row.trust, ...identity(row), approvedAt: row.approved_at };
}

const REQUEST_COLUMNS =
  "id, channel, sender, aliases, sender_name, created_at, expires_at, last_sent_at, denied";

/**
 * Pairing requests and paired people. Every method commits before it returns.
 *
 * @example
 * ```ts
 * const store = new PairingStore(openStateDb(config.agent.stateDir));
 * const person = store.approve("ABCD-EFGH", { name: "dave", trust: "familiar" }, Date.now());
 * ```
 */
export class PairingStore {
  readonly #db: DatabaseSync;

  constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** Deletes requests whose code has expired; returns them (for the log). */
  expire(now: number): PairingRequest[] {
    const rows = this.#db.prepare(
      `DELETE FROM pairing_requests WHERE expires_at <= ? RETURNING ${REQUEST_COLUMNS}`,
    ).all(now) as unknown as RequestRow[];
    return rows.map(toRequest);
  }

  /** The requests that have not expired (denied ones included), oldest first. */
  pending(now: number): PairingRequest[] {
    const rows = this.#db.prepare(
      `SELECT ${REQUEST_COLUMNS} FROM pairing_requests WHERE expires_at > ? ORDER BY id`,
    ).all(now) as unknown as RequestRow[];
    return rows.map(toRequest);
  }

  /** The sender's request that has not expired (it may be denied), if any. */
  pendingFor(channel: string, sender: string, now: number): PairingRequest | undefined {
    const row = this.#db.prepare(
      `SELECT ${REQUEST_COLUMNS} FROM pairing_requests
       WHERE channel = ? AND sender = ? AND expires_at > ?`,
    ).get(channel, sender, now) as RequestRow | undefined;
    return row && toRequest(row);
  }

  /**
   * Records a request for `code` unless `maxPending` requests already wait (after expired ones
   * are gone); returns it, or null when the cap refused it.
   */
  create(
    who: PairingIdentity,
    code: string,
    times: { now: number; expiresAt: number },
    maxPending: number,
  ): PairingRequest | null {
    return this.#transaction(() => {
      const { n } = this.#db.prepare(
        "SELECT COUNT(*) AS n FROM pairing_requests WHERE expires_at > ?",
      ).get(times.now) as { n: number };
      if (n >= maxPending) return null;
      // An expired request of the same sender would collide with the new one.
      this.#db.prepare("DELETE FROM pairing_requests WHERE channel = ? AND sender = ?")
        .run(who.channel, who.sender);
      const row = this.#db.prepare(
        `INSERT INTO pairing_requests
           (code_hash, channel, sender, aliases, sender_name, created_at, expires_at, last_sent_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING ${REQUEST_COLUMNS}`,
      ).get(
        hashPairingCode(code),
        who.channel,
        who.sender,
        JSON.stringify(who.aliases),
        who.senderName ?? null,
        times.now,
        times.expiresAt,
        times.now,
      ) as unknown as RequestRow;
      return toRequest(row);
    });
  }

  /** The request of a code that still works, if any (it stays pending). */
  pendingByCode(code: string, now: number): PairingRequest | undefined {
    const row = this.#db.prepare(
      `SELECT ${REQUEST_COLUMNS} FROM pairing_requests
       WHERE code_hash = ? AND expires_at > ? AND denied = 0`,
    ).get(hashPairingCode(code), now) as RequestRow | undefined;
    return row && toRequest(row);
  }

  /** Notes that the request's code (or a reminder of it) was sent again at `now`. */
  markSent(id: number, now: number): void {
    this.#db.prepare("UPDATE pairing_requests SET last_sent_at = ? WHERE id = ?").run(now, id);
  }

  /**
   * Denies the request of a code that still works and returns it; throws when there is none.
   * The request stays, denied, until it expires: its sender gets no new code before then.
   */
  deny(code: string, now: number): PairingRequest {
    const row = this.#db.prepare(
      `UPDATE pairing_requests SET denied = 1
       WHERE code_hash = ? AND expires_at > ? AND denied = 0 RETURNING ${REQUEST_COLUMNS}`,
    ).get(hashPairingCode(code), now) as RequestRow | undefined;
    if (!row) throw unknownCode(code);
    return toRequest(row);
  }

  /**
   * Turns the request of `code` into a paired person named `as.name` at `as.trust`, in one
   * transaction; throws `PairingError` when the code is unknown or expired, the name is taken by
   * another paired person, or the identity is paired already.
   */
  approve(code: string, as: { name: string; trust: TrustLevel }, now: number): PairedPerson {
    return this.#transaction(() => {
      const request = this.#take(code, now);
      if (this.person(as.name)) {
        throw new PairingError(
          "pairing.name_taken",
          `a paired person is already named "${as.name}"; choose another with --name`,
        );
      }
      const already = this.people().find((p) =>
        p.channel === request.channel && p.sender === request.sender
      );
      if (already) {
        throw new PairingError(
          "pairing.already_paired",
          `${request.channel}:${request.sender} is already paired as "${already.name}"`,
        );
      }
      this.#db.prepare(
        `INSERT INTO paired_people
           (name, trust, channel, sender, aliases, sender_name, approved_at)
         VALUES (?, ?, ?, ?, ?, ?, ?)`,
      ).run(
        as.name,
        as.trust,
        request.channel,
        request.sender,
        JSON.stringify(request.aliases),
        request.senderName ?? null,
        now,
      );
      return { ...as, ...identityOf(request), approvedAt: now };
    });
  }

  /** `people()`'s query, prepared once: every turn's routing reads it (pairing_approval.ts). */
  #peopleQuery?: StatementSync;

  /** Everyone approved, by name. */
  people(): PairedPerson[] {
    this.#peopleQuery ??= this.#db.prepare(
      `SELECT name, trust, channel, sender, aliases, sender_name, approved_at
       FROM paired_people ORDER BY name`,
    );
    const rows = this.#peopleQuery.all() as unknown as PersonRow[];
    return rows.map(toPerson);
  }

  /** One paired person by name. */
  person(name: string): PairedPerson | undefined {
    return this.people().find((p) => p.name === name);
  }

  /** Forgets a paired person; returns false when there was none of that name. */
  remove(name: string): boolean {
    return this.#db.prepare("DELETE FROM paired_people WHERE name = ?").run(name).changes > 0;
  }

  #take(code: string, now: number): PairingRequest {
    const row = this.#db.prepare(
      `DELETE FROM pairing_requests WHERE code_hash = ? AND expires_at > ? AND denied = 0
       RETURNING ${REQUEST_COLUMNS}`,
    ).get(hashPairingCode(code), now) as RequestRow | undefined;
    if (!row) throw unknownCode(code);
    return toRequest(row);
  }

  #transaction<T>(fn: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = fn();
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
  }
}

/** A code that no pending request has. */
export function unknownCode(code: string): PairingError {
  const symbols = normalizePairingCode(code);
  const shown = symbols === null ? code : formatPairingCode(symbols);
  return new PairingError(
    "pairing.unknown_code",
    `no pending pairing request has the code ${shown} (it may have expired or ` +
      "been decided; see coop pairing list)",
  );
}

function identityOf(request: PairingRequest): PairingIdentity {
  const { channel, sender, aliases, senderName } = request;
  return { channel, sender, aliases, ...(senderName === undefined ? {} : { senderName }) };
}
