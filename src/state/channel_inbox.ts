/**
 * `ChannelInbox`: what a messenger channel received and has not answered yet, and its cursor at
 * the service (Telegram's next `getUpdates` offset, signal-cli's last event id). An update is
 * written here, with the cursor past it, before the service is told it was received; it is
 * deleted once its reply was sent. So a restart answers what was pending, once, and asks the
 * service only for what came after: nothing is lost, nothing is answered twice (a crash between
 * sending a reply and deleting its row is the one window that repeats an answer).
 * @module
 */
import type { DatabaseSync } from "node:sqlite";

/** One received update waiting for its answer. */
export interface InboxItem {
  /** Arrival order in this inbox. */
  seq: number;
  /** The service's id of the update (unique per channel account). */
  item: string;
  /** The chat it belongs to: updates of one chat are answered in order. */
  chat: string;
  /** The update as received (JSON). */
  payload: unknown;
}

/** An update to record: its service id, chat and content. */
export interface ReceivedItem {
  /** The service's id of the update. */
  item: string;
  /** The chat it belongs to. */
  chat: string;
  /** The update as received. */
  payload: unknown;
}

/**
 * The inbox of one channel account (`telegram` + bot id, `signal` + number).
 *
 * @example
 * ```ts
 * const inbox = new ChannelInbox(db, "telegram", "123456");
 * const fresh = inbox.receive([{ item: "7", chat: "42", payload: update }], "8");
 * for (const entry of fresh) { await answer(entry); inbox.done(entry.seq); }
 * ```
 */
export class ChannelInbox {
  readonly #db: DatabaseSync;
  readonly #channel: string;
  readonly #account: string;

  constructor(db: DatabaseSync, channel: string, account: string) {
    this.#db = db;
    this.#channel = channel;
    this.#account = account;
  }

  /** The cursor stored with the last batch, or null before the first. */
  cursor(): string | null {
    const row = this.#db.prepare(
      "SELECT cursor FROM channel_cursors WHERE channel = ? AND account = ?",
    ).get(this.#channel, this.#account) as { cursor: string } | undefined;
    return row?.cursor ?? null;
  }

  /** Every update not answered yet, in arrival order. */
  pending(): InboxItem[] {
    const rows = this.#db.prepare(
      "SELECT seq, item, chat, payload FROM channel_inbox WHERE channel = ? AND account = ? " +
        "ORDER BY seq",
    ).all(this.#channel, this.#account) as Array<
      { seq: number; item: string; chat: string; payload: string }
    >;
    return rows.map((r) => ({ ...r, payload: JSON.parse(r.payload) }));
  }

  /**
   * Records a batch and the cursor after it in one durable transaction; returns the entries that
   * were new (an update already recorded is not recorded, nor returned, twice).
   */
  receive(items: readonly ReceivedItem[], cursor: string): InboxItem[] {
    const insert = this.#db.prepare(
      "INSERT OR IGNORE INTO channel_inbox (channel, account, item, chat, payload, received_at) " +
        "VALUES (?, ?, ?, ?, ?, ?) RETURNING seq",
    );
    const fresh: InboxItem[] = [];
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const now = Date.now();
      for (const { item, chat, payload } of items) {
        const row = insert.get(
          this.#channel,
          this.#account,
          item,
          chat,
          JSON.stringify(payload),
          now,
        ) as { seq: number } | undefined;
        if (row) fresh.push({ seq: row.seq, item, chat, payload });
      }
      this.#db.prepare(
        "INSERT INTO channel_cursors (channel, account, cursor) VALUES (?, ?, ?) " +
          "ON CONFLICT (channel, account) DO UPDATE SET cursor = excluded.cursor",
      ).run(this.#channel, this.#account, cursor);
      this.#db.exec("COMMIT");
    } catch (error) {
      this.#db.exec("ROLLBACK");
      throw error;
    }
    return fresh;
  }

  /** Forgets an update once its answer was sent. */
  done(seq: number): void {
    this.#db.prepare("DELETE FROM channel_inbox WHERE seq = ?").run(seq);
  }
}
