/**
 * Conversation sessions in the state database: every message is committed before `append`
 * returns, so a channel that acknowledges after it never loses an acknowledged message.
 * @module
 */
import type { WalFlusher } from "./wal_flush.ts";
import { randomBytes } from "node:crypto";
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { getLogger } from "@logtape/logtape";
import { CoopError } from "../errors/coop_error.ts";
import { isTrustLevel, type TrustLevel } from "../trust/trust_level.ts";

const log = getLogger(["coop", "sessions"]);

/** A JSON value, as stored in a message's `content`. */
export type JsonValue =
  | string
  | number
  | boolean
  | null
  | readonly JsonValue[]
  | { readonly [key: string]: JsonValue };

/** Identifies one conversation: the channel, the user on it, and the session id. */
export interface SessionKey {
  /** Channel name, e.g. `http`. */
  channel: string;
  /** The configured user (or default principal) the conversation belongs to. */
  user: string;
  /** The session id (URL-safe), e.g. from `newSessionId()` or the HTTP request. */
  session: string;
}

/** Who said a message in a session. */
export const MESSAGE_ROLES = ["user", "assistant", "tool"] as const;

/** The role of a stored message. */
export type MessageRole = (typeof MESSAGE_ROLES)[number];

/** A message to append: its content is any JSON (text, tool calls, tool results). */
export interface SessionMessage {
  /** `user`, `assistant` or `tool`. */
  role: MessageRole;
  /** Provider-neutral content: a string or blocks including tool calls and results. */
  content: JsonValue;
  /** The principal whose turn produced it. */
  principal: string;
  /** The turn's effective trust when it was written. */
  trust: TrustLevel;
}

/** A message as read back, with its position and time. */
export interface StoredMessage extends SessionMessage {
  /** Increasing across the whole database; orders messages within a session. */
  id: number;
  /** Milliseconds since the epoch when it was appended. */
  createdAt: number;
}

/** A failure of the session store, with a stable `code`. */
export class SessionStoreError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "SessionStoreError";
  }
}

const SESSION_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Returns a new random, URL-safe session id (128 bits, 22 characters). */
export function newSessionId(): string {
  return randomBytes(16).toString("base64url");
}

/** Returns true when `id` is a valid session id: 1-64 of A-Z a-z 0-9 _ -. */
export function isSessionId(id: string): boolean {
  return SESSION_ID.test(id);
}

function checkKey(key: SessionKey): void {
  if (!key.channel || !key.user) {
    throw new SessionStoreError("session.invalid_key", "a session key needs a channel and a user");
  }
  if (!isSessionId(key.session)) {
    throw new SessionStoreError(
      "session.invalid_id",
      `session id ${JSON.stringify(key.session)} must be 1-64 of A-Z a-z 0-9 _ -`,
    );
  }
}

interface MessageRow {
  id: number;
  role: string;
  content: string;
  principal: string;
  trust: string;
  created_at: number;
}

function toMessage(row: MessageRow): StoredMessage {
  const role = row.role as MessageRole;
  const trust = row.trust;
  if (!(MESSAGE_ROLES as readonly string[]).includes(role) || !isTrustLevel(trust)) {
    throw new SessionStoreError(
      "session.corrupt_row",
      `message ${row.id} has an unknown role or trust (${row.role}, ${row.trust})`,
    );
  }
  return {
    id: row.id,
    role,
    content: JSON.parse(row.content) as JsonValue,
    principal: row.principal,
    trust,
    createdAt: row.created_at,
  };
}

/** How durable one `append` is when it returns. */
export interface AppendOptions {
  /**
   * `true` (default): committed and on disk (the WAL is fsynced, `synchronous=FULL`), and with
   * it every message committed before. `false`: committed — a crash of Coop cannot lose it —
   * but left to the OS until the next durable append or `sync()`: for a turn's intermediate
   * messages, which no channel has acknowledged yet.
   */
  durable?: boolean;
}

/**
 * Sessions over an open state database (`openStateDb`). All methods are synchronous: when one
 * returns, its transaction is committed and, unless asked otherwise, on disk.
 *
 * @example
 * ```ts
 * const sessions = new SessionStore(openStateDb(config.agent.stateDir));
 * const key = { channel: "http", user: "bob", session: request.session ?? newSessionId() };
 * sessions.append(key, { role: "user", content: text, principal: "bob", trust: "full" });
 * const context = sessions.history(key, 50);
 * ```
 */
export class SessionStore {
  readonly #db: DatabaseSync;
  readonly #now: () => number;
  readonly #findSession: StatementSync;
  readonly #createSession: StatementSync;
  readonly #insert: StatementSync;
  readonly #insertIntoExisting: StatementSync;
  readonly #history: StatementSync;
  readonly #clear: StatementSync;
  /** A commit since the last fsync of the WAL was not durable (see `sync`). */
  #unsynced = false;
  /** Group commit of non-durable appends (see `flush`); absent for an in-memory database. */
  readonly #wal?: WalFlusher;

  constructor(db: DatabaseSync, now: () => number = Date.now, wal?: WalFlusher) {
    this.#db = db;
    this.#now = now;
    this.#wal = wal;
    this.#findSession = db.prepare(
      "SELECT id FROM sessions WHERE channel = ? AND user = ? AND session = ?",
    );
    this.#createSession = db.prepare(
      "INSERT INTO sessions (channel, user, session, created_at) VALUES (?, ?, ?, ?)",
    );
    this.#insert = db.prepare(
      `INSERT INTO messages (session_ref, role, content, principal, trust, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
    // The same insert, finding the session itself: one statement, one implicit transaction, for
    // every message after a session's first (no BEGIN, lookup and COMMIT of their own).
    this.#insertIntoExisting = db.prepare(
      `INSERT INTO messages (session_ref, role, content, principal, trust, created_at)
       SELECT id, ?, ?, ?, ?, ? FROM sessions WHERE channel = ? AND user = ? AND session = ?`,
    );
    // The newest `limit` messages, returned oldest first.
    this.#history = db.prepare(
      `SELECT * FROM (
         SELECT m.id, m.role, m.content, m.principal, m.trust, m.created_at
         FROM messages m JOIN sessions s ON s.id = m.session_ref
         WHERE s.channel = ? AND s.user = ? AND s.session = ?
         ORDER BY m.id DESC LIMIT ?
       ) ORDER BY id ASC`,
    );
    this.#clear = db.prepare("DELETE FROM sessions WHERE channel = ? AND user = ? AND session = ?");
  }

  /** Persists `message` in the session (creating the session) and returns it once committed. */
  append(key: SessionKey, message: SessionMessage, options: AppendOptions = {}): StoredMessage {
    const durable = options.durable ?? true;
    checkKey(key);
    if (!(MESSAGE_ROLES as readonly string[]).includes(message.role)) {
      throw new SessionStoreError("session.invalid_role", `unknown role "${message.role}"`);
    }
    if (!isTrustLevel(message.trust)) {
      throw new SessionStoreError("session.invalid_trust", `unknown trust "${message.trust}"`);
    }
    const content = JSON.stringify(message.content);
    if (content === undefined) {
      throw new SessionStoreError("session.invalid_content", "message content must be JSON");
    }
    const createdAt = this.#now();
    // NORMAL skips the commit's fsync of the WAL; the WAL is append-only, so the next FULL
    // commit's fsync (or a checkpoint) makes these frames durable along with its own.
    if (!durable) this.#db.exec("PRAGMA synchronous = NORMAL");
    try {
      const fields = [message.role, content, message.principal, message.trust, createdAt] as const;
      const inserted = this.#insertIntoExisting.run(...fields, key.channel, key.user, key.session);
      const id = Number(inserted.changes) === 1
        ? Number(inserted.lastInsertRowid)
        : this.#insertIntoNew(key, fields);
      this.#unsynced = !durable;
      if (!durable) this.#wal?.committed();
      log.debug("session.append", {
        event: "session.append",
        ...key,
        id,
        role: message.role,
        durable,
      });
      return { ...message, id, createdAt };
    } finally {
      if (!durable) this.#db.exec("PRAGMA synchronous = FULL");
    }
  }

  /** A session's first message: the session and the message in one transaction. */
  #insertIntoNew(
    key: SessionKey,
    fields: readonly [string, string, string, string, number],
  ): number {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const found = this.#findSession.get(key.channel, key.user, key.session) as
        | { id: number }
        | undefined;
      const ref = found?.id ??
        Number(
          this.#createSession.run(key.channel, key.user, key.session, fields[4]).lastInsertRowid,
        );
      const id = Number(this.#insert.run(ref, ...fields).lastInsertRowid);
      this.#db.exec("COMMIT");
      return id;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  /**
   * Puts every committed message on disk: a no-op when the last append was durable, else a
   * checkpoint, which fsyncs the WAL first (`synchronous=FULL`).
   */
  sync(): void {
    if (!this.#unsynced) return;
    this.#db.exec("PRAGMA wal_checkpoint(PASSIVE)");
    this.#unsynced = false;
  }

  /**
   * Resolves once every message appended so far is on disk, without stalling the event loop:
   * one fsync of the WAL on the runtime's thread pool, shared by every append made before it
   * began (group commit, `WalFlusher`). Without a `WalFlusher`, the same as `sync()`.
   */
  async flush(): Promise<void> {
    if (this.#wal) await this.#wal.flush();
    else this.sync();
  }

  /** Returns the newest `limit` messages of the session, oldest first (empty when unknown). */
  history(key: SessionKey, limit: number = 100): StoredMessage[] {
    checkKey(key);
    if (!Number.isInteger(limit) || limit < 1) {
      throw new SessionStoreError("session.invalid_limit", `limit must be ≥ 1, got ${limit}`);
    }
    const rows = this.#history.all(
      key.channel,
      key.user,
      key.session,
      limit,
    ) as unknown as MessageRow[];
    return rows.map(toMessage);
  }

  /** Deletes the session and all its messages (`/clear`); returns true when it existed. */
  clear(key: SessionKey): boolean {
    checkKey(key);
    const changes = Number(this.#clear.run(key.channel, key.user, key.session).changes);
    log.info("session.clear", { event: "session.clear", ...key, existed: changes > 0 });
    return changes > 0;
  }
}
