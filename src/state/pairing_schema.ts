/**
 * The tables of pairing (migration 3 of the state database): requests waiting for the owner,
 * keyed by the code's hash (a denied one stays, without a working code, until it expires: its
 * sender hears nothing more until then), and the people approved from them.
 * @module
 */

/** SQL of the pairing tables; times are milliseconds since the epoch. */
export const PAIRING_SCHEMA = `
  CREATE TABLE pairing_requests (
    id INTEGER PRIMARY KEY,
    code_hash TEXT NOT NULL UNIQUE,
    channel TEXT NOT NULL,
    sender TEXT NOT NULL,
    aliases TEXT NOT NULL CHECK (json_valid(aliases)),
    sender_name TEXT,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    last_sent_at INTEGER NOT NULL,
    denied INTEGER NOT NULL DEFAULT 0,
    UNIQUE (channel, sender)
  );
  CREATE TABLE paired_people (
    name TEXT PRIMARY KEY,
    trust TEXT NOT NULL,
    channel TEXT NOT NULL,
    sender TEXT NOT NULL,
    aliases TEXT NOT NULL CHECK (json_valid(aliases)),
    sender_name TEXT,
    approved_at INTEGER NOT NULL,
    UNIQUE (channel, sender)
  );
`;
