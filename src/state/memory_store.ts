/**
 * The memory stores (`private`, `shared`, `social`) in the state database, searched with
 * SQLite FTS5. This layer stores and finds; who may use which store is `memory_access.ts`.
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { getLogger } from "@logtape/logtape";
import {
  isTrustLevel,
  MEMORY_STORES,
  type MemoryStore,
  type TrustLevel,
} from "../trust/trust_level.ts";

/** One memory as a search returns it. */
export interface MemoryHit {
  /** Stable id of the memory. */
  id: number;
  /** The store it lives in. */
  store: MemoryStore;
  /** What was remembered. */
  text: string;
  /** The principal whose turn wrote it. */
  author: string;
  /**
   * The effective trust of the turn that wrote it (never more trusted than its author): a turn
   * that reads it is tainted to this trust.
   */
  trust: TrustLevel;
  /** Milliseconds since the epoch when it was written. */
  createdAt: number;
}

const log = getLogger(["coop", "memory"]);

/** A memory to save, with the provenance of the turn that wrote it. */
export interface NewMemory {
  /** The store it goes to. */
  store: MemoryStore;
  /** What to remember. */
  text: string;
  /** The principal whose turn wrote it. */
  author: string;
  /** The effective trust of that turn. */
  trust: TrustLevel;
  /** The channel of that turn. */
  channel: string;
}

/**
 * Turns free text into an FTS5 query that cannot be a syntax error: every word becomes a quoted
 * term, joined with OR (ranking puts the memories matching most words first). Returns null
 * when the text has no words.
 *
 * @example
 * ```ts
 * ftsQuery('Bob\'s "birthday"?'); // '"bob" OR "s" OR "birthday"'
 * ```
 */
export function ftsQuery(text: string): string | null {
  const words = text.toLowerCase().match(/[\p{L}\p{N}_]+/gu) ?? [];
  const unique = [...new Set(words)].slice(0, 32);
  return unique.length === 0 ? null : unique.map((w) => `"${w}"`).join(" OR ");
}

interface MemoryRow {
  id: number;
  store: MemoryStore;
  text: string;
  author: string;
  trust: string;
  created_at: number;
}

/**
 * The trust a stored memory carries. A value that names no trust level (a row edited by hand,
 * or written by a newer Coop) is read as `public`: provenance that cannot be established taints
 * a turn as far as anything can, so reading it never leaves a turn more trusted than it should be.
 */
function storedTrust(row: MemoryRow): TrustLevel {
  if (isTrustLevel(row.trust)) return row.trust;
  log.warn("memory.unknown_trust {id}: {trust} read as public", {
    event: "memory.unknown_trust",
    id: row.id,
    trust: row.trust,
  });
  return "public";
}

/** Memories over an open state database (`openStateDb`); synchronous and committed on return. */
export class MemoryDatabase {
  readonly #db: DatabaseSync;
  readonly #now: () => number;
  readonly #insert: StatementSync;

  constructor(db: DatabaseSync, now: () => number = Date.now) {
    this.#db = db;
    this.#now = now;
    this.#insert = db.prepare(
      `INSERT INTO memories (store, text, author, trust, channel, created_at)
       VALUES (?, ?, ?, ?, ?, ?)`,
    );
  }

  /** Saves a memory and returns its id. Callers authorize first (see `gatedMemory`). */
  write(memory: NewMemory): number {
    const id = Number(
      this.#insert.run(
        memory.store,
        memory.text,
        memory.author,
        memory.trust,
        memory.channel,
        this.#now(),
      ).lastInsertRowid,
    );
    log.info("memory.write", {
      event: "memory.write",
      id,
      store: memory.store,
      author: memory.author,
      trust: memory.trust,
      channel: memory.channel,
    });
    return id;
  }

  /** Returns up to `limit` memories from `stores` matching `query`, best match first. */
  search(query: string, stores: readonly MemoryStore[], limit: number): MemoryHit[] {
    const match = ftsQuery(query);
    const wanted = stores.filter((s) => (MEMORY_STORES as readonly string[]).includes(s));
    if (match === null || wanted.length === 0 || limit < 1) return [];
    const placeholders = wanted.map(() => "?").join(", ");
    const rows = this.#db.prepare(
      `SELECT m.id, m.store, m.text, m.author, m.trust, m.created_at
       FROM memories_fts f JOIN memories m ON m.id = f.rowid
       WHERE memories_fts MATCH ? AND m.store IN (${placeholders})
       ORDER BY bm25(memories_fts), m.id DESC
       LIMIT ?`,
    ).all(match, ...wanted, limit) as unknown as MemoryRow[];
    return rows.map((r) => ({
      id: r.id,
      store: r.store,
      text: r.text,
      author: r.author,
      trust: storedTrust(r),
      createdAt: r.created_at,
    }));
  }
}
