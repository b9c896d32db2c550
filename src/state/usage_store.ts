/**
 * Usage counters for budgets: one row per turn (who, which group chat, when) to which the turn's
 * model tokens and sandbox CPU time are added as they are measured. Sums over a rolling window
 * are what `BudgetGate` checks and `coop usage` prints; rows older than any window are pruned.
 * @module
 */
import type { DatabaseSync, StatementSync } from "node:sqlite";
import type { WalFlusher } from "./wal_flush.ts";

/** What a person or a group used in a window. */
export interface UsageTotals {
  /** Turns started. */
  turns: number;
  /** Model tokens (input + output) those turns used, as the providers reported them. */
  tokens: number;
  /** CPU seconds their sandboxes used, measured (`ExecResult.cpu`). */
  sandboxSeconds: number;
}

/** Whose usage: a person (a user name, or `public:<sender>`) or a configured group chat. */
export type UsageSubject = { person: string } | { group: string };

/** One turn's contribution, for working out when a budget frees up. */
export interface TurnUsage {
  /** When the turn started (ms since the epoch). */
  at: number;
  tokens: number;
  sandboxSeconds: number;
}

interface TurnRow {
  at: number;
  tokens: number;
  sandbox_us: number;
}

function subjectClause(subject: UsageSubject): [string, string] {
  return "person" in subject ? ["person = ?", subject.person] : ["group_name = ?", subject.group];
}

/**
 * The usage counters over an open state database; every write is committed on return. With a
 * `WalFlusher` (the gateway's), writes skip their own fsync and are on disk after the next
 * `flush()` — which every turn awaits before its reply leaves — like the turn's messages;
 * without one, each write is on disk when it returns.
 */
export class UsageStore {
  readonly #db: DatabaseSync;
  readonly #now: () => number;
  readonly #wal?: WalFlusher;
  readonly #begin: StatementSync;
  readonly #add: StatementSync;
  /**
   * With a `WalFlusher`: what turns added since the last write, by turn id — written in one
   * commit before the next `flush()` (which every turn awaits before its reply) or read.
   */
  readonly #pending = new Map<number, { tokens: number; sandboxUs: number }>();

  constructor(db: DatabaseSync, now: () => number = Date.now, wal?: WalFlusher) {
    this.#db = db;
    this.#now = now;
    this.#wal = wal;
    this.#begin = db.prepare(
      "INSERT INTO usage_turns (person, group_name, channel, started_at) VALUES (?, ?, ?, ?)",
    );
    this.#add = db.prepare(
      "UPDATE usage_turns SET tokens = tokens + ?, sandbox_us = sandbox_us + ? WHERE id = ?",
    );
    wal?.beforeFlush(() => this.writePending());
  }

  /** Records a turn starting now; returns its id for `addTokens` and `addSandboxSeconds`. */
  beginTurn(turn: { person: string; group?: string; channel: string }): number {
    this.writePending();
    return Number(
      this.#write(() => this.#begin.run(turn.person, turn.group ?? null, turn.channel, this.#now()))
        .lastInsertRowid,
    );
  }

  /** Adds model tokens to turn `id`. */
  addTokens(id: number, tokens: number): void {
    if (tokens > 0) this.#addTo(id, Math.round(tokens), 0);
  }

  /** Adds measured sandbox CPU time to turn `id`. */
  addSandboxSeconds(id: number, seconds: number): void {
    if (seconds > 0) this.#addTo(id, 0, Math.round(seconds * 1e6));
  }

  /**
   * Without a `WalFlusher`, written at once (and on disk on return). With one, kept until the
   * next `flush()` or read: a turn adds to its row once per model response and per command, and
   * an autocommit each (≈ 75 µs in a turn, and a WAL frame of the row's page) was a tenth of
   * what the gateway added to a tool call; one commit per turn does for all of them. A crash of
   * Coop before the turn's flush loses that turn's tokens and CPU seconds, never its turn.
   */
  #addTo(id: number, tokens: number, sandboxUs: number): void {
    if (!this.#wal) {
      this.#add.run(tokens, sandboxUs, id);
      return;
    }
    const pending = this.#pending.get(id);
    if (pending) {
      pending.tokens += tokens;
      pending.sandboxUs += sandboxUs;
    } else this.#pending.set(id, { tokens, sandboxUs });
  }

  /** Writes what turns added since the last write, in one commit (`WalFlusher` runs it). */
  writePending(): void {
    if (this.#pending.size === 0) return;
    const pending = [...this.#pending];
    this.#pending.clear();
    try {
      this.#write(() => {
        this.#db.exec("BEGIN");
        try {
          for (const [id, add] of pending) this.#add.run(add.tokens, add.sandboxUs, id);
          this.#db.exec("COMMIT");
        } catch (error) {
          this.#db.exec("ROLLBACK");
          throw error;
        }
      });
    } catch (error) {
      // Kept for the next try (a full disk may have room again); the caller sees the failure.
      for (const [id, add] of pending) this.#addTo(id, add.tokens, add.sandboxUs);
      throw error;
    }
  }

  /**
   * A commit of its own. With a `WalFlusher`, without its fsync (≈ 0.8 ms on the event loop, far
   * more on a busy disk): committed, and on disk at the turn's `flush()` like its messages.
   */
  #write<T>(run: () => T): T {
    if (!this.#wal) return run();
    this.#db.exec("PRAGMA synchronous = NORMAL");
    try {
      const result = run();
      this.#wal.committed();
      return result;
    } finally {
      this.#db.exec("PRAGMA synchronous = FULL");
    }
  }

  /** What `subject` used in the last `windowMs`. */
  totals(subject: UsageSubject, windowMs: number): UsageTotals {
    this.writePending();
    const [where, value] = subjectClause(subject);
    const row = this.#db.prepare(
      `SELECT COUNT(*) AS turns, COALESCE(SUM(tokens), 0) AS tokens,
              COALESCE(SUM(sandbox_us), 0) AS sandbox_us
       FROM usage_turns WHERE ${where} AND started_at > ?`,
    ).get(value, this.#now() - windowMs) as { turns: number; tokens: number; sandbox_us: number };
    return { turns: row.turns, tokens: row.tokens, sandboxSeconds: row.sandbox_us / 1e6 };
  }

  /** `subject`'s turns in the last `windowMs`, oldest first. */
  turns(subject: UsageSubject, windowMs: number): TurnUsage[] {
    this.writePending();
    const [where, value] = subjectClause(subject);
    const rows = this.#db.prepare(
      `SELECT started_at AS at, tokens, sandbox_us FROM usage_turns
       WHERE ${where} AND started_at > ? ORDER BY started_at, id`,
    ).all(value, this.#now() - windowMs) as unknown as TurnRow[];
    return rows.map((r) => ({ at: r.at, tokens: r.tokens, sandboxSeconds: r.sandbox_us / 1e6 }));
  }

  /** Everyone (`person`) or every group chat (`group`) with a turn in the last `windowMs`. */
  subjects(kind: "person" | "group", windowMs: number): string[] {
    this.writePending();
    const column = kind === "person" ? "person" : "group_name";
    const rows = this.#db.prepare(
      `SELECT DISTINCT ${column} AS name FROM usage_turns
       WHERE ${column} IS NOT NULL AND started_at > ? ORDER BY ${column}`,
    ).all(this.#now() - windowMs) as Array<{ name: string }>;
    return rows.map((r) => r.name);
  }

  /** Forgets turns that started more than `windowMs` ago; returns how many. */
  prune(windowMs: number): number {
    this.writePending();
    const cutoff = this.#now() - windowMs;
    return Number(
      this.#db.prepare("DELETE FROM usage_turns WHERE started_at <= ?").run(cutoff)
        .changes,
    );
  }
}
