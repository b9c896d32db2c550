/**
 * Opens Coop's state database (`<state_dir>/coop.db`): private permissions, durable pragmas and
 * versioned migrations. Sessions, memory and usage counters live in it; `coop start` holds it,
 * and the owner's `coop memory` and `coop usage` open it beside a running gateway (WAL).
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { getLogger } from "@logtape/logtape";
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import { PAIRING_SCHEMA } from "./pairing_schema.ts";
import { CHANNEL_INBOX_MIGRATION } from "./channel_inbox_schema.ts";

const log = getLogger(["coop", "sessions"]);

/** The database file name inside the state directory. */
export const STATE_DB_FILE = "coop.db";

/** A failure opening or migrating the state database. */
export class StateDbError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "StateDbError";
  }
}

/** One schema step; `version` numbers are consecutive from 1 and never reused. */
export interface Migration {
  /** The schema version after this step. */
  version: number;
  /** What the step adds, for the log. */
  description: string;
  /** SQL run inside the migration's transaction. */
  sql: string;
}

/** Every schema step, in order. Append new steps; never edit a released one. */
export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    description: "sessions and messages",
    sql: `
      CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        channel TEXT NOT NULL,
        user TEXT NOT NULL,
        session TEXT NOT NULL,
        created_at INTEGER NOT NULL,
        UNIQUE (channel, user, session)
      );
      CREATE TABLE messages (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        session_ref INTEGER NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
        role TEXT NOT NULL,
        content TEXT NOT NULL CHECK (json_valid(content)),
        principal TEXT NOT NULL,
        trust TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE INDEX messages_by_session ON messages (session_ref, id);
    `,
  },
  {
    version: 2,
    description: "memory stores with full-text search",
    sql: `
      CREATE TABLE memories (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        store TEXT NOT NULL CHECK (store IN ('private', 'shared', 'social')),
        text TEXT NOT NULL,
        author TEXT NOT NULL,
        trust TEXT NOT NULL,
        channel TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      CREATE VIRTUAL TABLE memories_fts USING fts5(
        text, content='memories', content_rowid='id', tokenize='porter unicode61'
      );
      CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
      END;
      CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
      END;
    `,
  },
  {
    version: 3,
    description: "personal memory stores",
    // SQLite cannot change a CHECK constraint in place: the table is rebuilt with the same ids
    // (so the full-text index, keyed by id, stays valid) and its triggers recreated.
    sql: `
      CREATE TABLE memories_v3 (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        store TEXT NOT NULL CHECK (store IN ('private', 'shared', 'social', 'personal')),
        person TEXT CHECK ((store = 'personal') = (person IS NOT NULL)),
        text TEXT NOT NULL,
        author TEXT NOT NULL,
        trust TEXT NOT NULL,
        channel TEXT NOT NULL,
        created_at INTEGER NOT NULL
      );
      INSERT INTO memories_v3 (id, store, person, text, author, trust, channel, created_at)
        SELECT id, store, NULL, text, author, trust, channel, created_at FROM memories;
      DROP TRIGGER memories_ai;
      DROP TRIGGER memories_ad;
      DROP TABLE memories;
      ALTER TABLE memories_v3 RENAME TO memories;
      CREATE INDEX memories_by_person ON memories (person, id) WHERE person IS NOT NULL;
      CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
        INSERT INTO memories_fts(rowid, text) VALUES (new.id, new.text);
      END;
      CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
        INSERT INTO memories_fts(memories_fts, rowid, text) VALUES ('delete', old.id, old.text);
      END;
    `,
  },
  {
    version: 4,
    description: "usage counters for budgets",
    sql: `
      CREATE TABLE usage_turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        person TEXT NOT NULL,
        group_name TEXT,
        channel TEXT NOT NULL,
        started_at INTEGER NOT NULL,
        tokens INTEGER NOT NULL DEFAULT 0,
        sandbox_us INTEGER NOT NULL DEFAULT 0
      );
      CREATE INDEX usage_by_person ON usage_turns (person, started_at);
      CREATE INDEX usage_by_group ON usage_turns (group_name, started_at)
        WHERE group_name IS NOT NULL;
    `,
  },
  CHANNEL_INBOX_MIGRATION,
  {
    version: 6,
    description: "pairing requests and paired people",
    sql: PAIRING_SCHEMA,
  },
];

/** Creates `dir` (and parents) and makes it 0700: only Coop's user may enter it. */
export function ensurePrivateDir(dir: string): void {
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });
  // mkdir's mode is masked by the umask and ignored for an existing directory.
  Deno.chmodSync(dir, 0o700);
}

function ensurePrivateFile(path: string): void {
  // Create it ourselves so it never exists with the umask's permissions, even briefly.
  Deno.openSync(path, { create: true, write: true, mode: 0o600 }).close();
  Deno.chmodSync(path, 0o600);
}

/** Returns the schema version recorded in `db` (0 for a new database). */
export function schemaVersion(db: DatabaseSync): number {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_version (
    version INTEGER PRIMARY KEY, description TEXT NOT NULL, applied_at INTEGER NOT NULL)`);
  const row = db.prepare("SELECT MAX(version) AS v FROM schema_version").get() as
    | { v: number | null }
    | undefined;
  return row?.v ?? 0;
}

/** Applies every migration newer than the database, each in its own transaction. */
export function migrate(db: DatabaseSync, migrations: readonly Migration[] = MIGRATIONS): number {
  const current = schemaVersion(db);
  const latest = migrations.at(-1)?.version ?? 0;
  if (current > latest) {
    throw new StateDbError(
      "state.schema_too_new",
      `the state database has schema version ${current}, newer than this Coop knows ` +
        `(${latest}); upgrade Coop or point [agent] state_dir elsewhere`,
    );
  }
  for (const step of migrations) {
    if (step.version <= current) continue;
    db.exec("BEGIN IMMEDIATE");
    try {
      db.exec(step.sql);
      db.prepare("INSERT INTO schema_version (version, description, applied_at) VALUES (?, ?, ?)")
        .run(step.version, step.description, Date.now());
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw new StateDbError(
        "state.migration_failed",
        `state database migration ${step.version} (${step.description}) failed: ${
          errorMessage(error)
        }`,
        { cause: error },
      );
    }
    log.info("state.migrated", { event: "state.migrated", version: step.version });
  }
  return latest;
}

/**
 * Opens (creating when needed) `<stateDir>/coop.db` with WAL, `synchronous=FULL` and foreign
 * keys, and migrates it to the latest schema.
 *
 * @example
 * ```ts
 * const db = openStateDb(config.agent.stateDir);
 * const sessions = new SessionStore(db);
 * ```
 */
export function openStateDb(stateDir: string): DatabaseSync {
  const file = join(stateDir, STATE_DB_FILE);
  let db: DatabaseSync;
  try {
    ensurePrivateDir(stateDir);
    ensurePrivateFile(file);
    db = new DatabaseSync(file);
  } catch (error) {
    throw new StateDbError(
      "state.open_failed",
      `cannot open the state database ${file}: ${errorMessage(error)}`,
      { cause: error },
    );
  }
  try {
    // WAL: readers never block the writer. FULL: every commit is fsynced before it returns,
    // so an acknowledged message survives a power cut, not only a crash (see docs/state.md).
    db.exec("PRAGMA journal_mode = WAL");
    db.exec("PRAGMA synchronous = FULL");
    db.exec("PRAGMA foreign_keys = ON");
    db.exec("PRAGMA busy_timeout = 5000");
    migrate(db);
  } catch (error) {
    db.close();
    if (error instanceof StateDbError) throw error;
    throw new StateDbError(
      "state.open_failed",
      `cannot open the state database ${file}: ${errorMessage(error)}`,
      { cause: error },
    );
  }
  return db;
}
