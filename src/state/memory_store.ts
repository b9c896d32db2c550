/**
 * The memory stores (`private`, `shared`, `social`, and one `personal` store per principal) in
 * the state database, searched with SQLite FTS5. This layer stores and finds; who may use which
 * store is `authorize()`, applied by `memory_access.ts` (and the owner's `coop memory`).
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import { getLogger } from "@logtape/logtape";
import {
  isTrustLevel,
  MEMORY_STORE_NAMES,
  type MemoryStoreName,
  type TrustLevel,
} from "../trust/trust_level.ts";

/** One memory as a search returns it. */
export interface MemoryHit {
  /** Stable id of the memory. */
  id: number;
  /** The store it lives in. */
  store: MemoryStoreName;
  /** Whose personal store holds it (`personal` only). */
  person?: string;
  /** What was remembered. */
  text: string;
  /** The principal whose turn wrote it. */
  author: string;
  /** The channel of the turn that wrote it. */
  channel: string;
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
  store: MemoryStoreName;
  /** Whose personal store (`personal` only; the author's). */
  person?: string;
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
  store: MemoryStoreName;
  person: string | null;
  text: string;
  author: string;
  channel: string;
  trust: string;
  created_at: number;
}

/** Which memories a listing returns (`coop memory list`); every field narrows it. */
export interface MemoryFilter {
  /** Only this store. */
  store?: MemoryStoreName;
  /** Only what concerns this person: written by them, or in their personal store. */
  user?: string;
}

const COLUMNS = "m.id, m.store, m.person, m.text, m.author, m.channel, m.trust, m.created_at";

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
      `INSERT INTO memories (store, person, text, author, trust, channel, created_at)
       VALUES (?, ?, ?, ?, ?, ?, ?)`,
    );
  }

  /** Saves a memory and returns its id. Callers authorize first (see `gatedMemory`). */
  write(memory: NewMemory): number {
    const id = Number(
      this.#insert.run(
        memory.store,
        memory.store === "personal" ? memory.person ?? memory.author : null,
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
      person: memory.store === "personal" ? memory.person ?? memory.author : undefined,
      author: memory.author,
      trust: memory.trust,
      channel: memory.channel,
    });
    return id;
  }

  /**
   * Returns up to `limit` memories matching `query` from the tier `stores` and the personal
   * stores of `personalOf`, best match first. Callers pass only what the turn may read.
   */
  search(
    query: string,
    stores: readonly MemoryStoreName[],
    limit: number,
    personalOf: readonly string[] = [],
  ): MemoryHit[] {
    const match = ftsQuery(query);
    const tiers = stores.filter((s) => s !== "personal" && MEMORY_STORE_NAMES.includes(s));
    if (match === null || tiers.length + personalOf.length === 0 || limit < 1) return [];
    const where = [
      ...(tiers.length ? [`m.store IN (${tiers.map(() => "?").join(", ")})`] : []),
      ...(personalOf.length
        ? [`(m.store = 'personal' AND m.person IN (${personalOf.map(() => "?").join(", ")}))`]
        : []),
    ].join(" OR ");
    const rows = this.#db.prepare(
      `SELECT ${COLUMNS}
       FROM memories_fts f JOIN memories m ON m.id = f.rowid
       WHERE memories_fts MATCH ? AND (${where})
       ORDER BY bm25(memories_fts), m.id DESC
       LIMIT ?`,
    ).all(match, ...tiers, ...personalOf, limit) as unknown as MemoryRow[];
    return rows.map(toHit);
  }

  /** Returns memory `id`, or null when there is none. Callers authorize before showing it. */
  get(id: number): MemoryHit | null {
    const row = this.#db.prepare(`SELECT ${COLUMNS} FROM memories m WHERE m.id = ?`).get(id) as
      | MemoryRow
      | undefined;
    return row ? toHit(row) : null;
  }

  /** Every memory `filter` selects, newest first (the owner's `coop memory list`). */
  list(filter: MemoryFilter = {}): MemoryHit[] {
    const clauses: string[] = [];
    const values: string[] = [];
    if (filter.store) clauses.push("m.store = ?"), values.push(filter.store);
    if (filter.user) {
      clauses.push("(m.author = ? OR m.person = ?)");
      values.push(filter.user, filter.user);
    }
    const where = clauses.length ? `WHERE ${clauses.join(" AND ")}` : "";
    const rows = this.#db.prepare(`SELECT ${COLUMNS} FROM memories m ${where} ORDER BY m.id DESC`)
      .all(...values) as unknown as MemoryRow[];
    return rows.map(toHit);
  }

  /** Deletes memory `id` (and its search entry); false when there was none. Authorize first. */
  remove(id: number, by: string): boolean {
    const removed = Number(this.#db.prepare("DELETE FROM memories WHERE id = ?").run(id).changes);
    if (removed > 0) log.info("memory.forget", { event: "memory.forget", id, by });
    return removed > 0;
  }
}

function toHit(r: MemoryRow): MemoryHit {
  return {
    id: r.id,
    store: r.store,
    ...(r.person === null ? {} : { person: r.person }),
    text: r.text,
    author: r.author,
    channel: r.channel,
    trust: storedTrust(r),
    createdAt: r.created_at,
  };
}
