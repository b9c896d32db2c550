/**
 * The schema step of the messenger channels' inbox (`channel_inbox.ts`): updates received and
 * not yet answered, and each channel account's cursor at its service.
 * @module
 */

/** Migration 3: `channel_inbox` and `channel_cursors`. */
export const CHANNEL_INBOX_MIGRATION = {
  version: 5,
  description: "messenger inbox and cursors",
  sql: `
    CREATE TABLE channel_inbox (
      seq INTEGER PRIMARY KEY AUTOINCREMENT,
      channel TEXT NOT NULL,
      account TEXT NOT NULL,
      item TEXT NOT NULL,
      chat TEXT NOT NULL,
      payload TEXT NOT NULL CHECK (json_valid(payload)),
      received_at INTEGER NOT NULL,
      UNIQUE (channel, account, item)
    );
    CREATE TABLE channel_cursors (
      channel TEXT NOT NULL,
      account TEXT NOT NULL,
      cursor TEXT NOT NULL,
      PRIMARY KEY (channel, account)
    );
  `,
} as const;
