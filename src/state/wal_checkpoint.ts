/**
 * Checkpoints of the state database's write-ahead log, run on the off-loop worker instead of the
 * event loop. SQLite's automatic checkpoint runs inside the commit that crosses
 * `wal_autocheckpoint` pages: it copies the WAL into the database and fsyncs both, on the thread
 * that committed — measured in the gateway under load, a third to a half of what the event loop
 * spent appending session messages, and single stalls of tens of milliseconds that every turn,
 * channel and timer waited for (docs/performance.md, session 12).
 *
 * A PASSIVE checkpoint from a second connection is SQLite's own way to do this: it takes no
 * writer lock (commits go on meanwhile), copies only frames no reader still needs, and the next
 * commit restarts the WAL from its start once everything was copied. Durability is unaffected:
 * a commit is on disk once the WAL is (`wal_flush.ts`); a checkpoint only moves it.
 * @module
 */
import { DatabaseSync } from "node:sqlite";

/** What one checkpoint did: WAL frames in all, and how many of them are now in the database. */
export interface CheckpointResult {
  logFrames: number;
  checkpointedFrames: number;
}

/**
 * Checkpoints (PASSIVE) the WAL of the database at `path` through a connection of its own.
 * Synchronous: meant for the off-loop worker (`runOffLoop`), never the event loop.
 */
export function checkpointWal(path: string): CheckpointResult {
  const db = new DatabaseSync(path);
  try {
    // FULL: the checkpoint fsyncs the WAL before copying and the database after.
    db.exec("PRAGMA busy_timeout = 5000; PRAGMA synchronous = FULL");
    const row = db.prepare("PRAGMA wal_checkpoint(PASSIVE)").get() as {
      log: number;
      checkpointed: number;
    };
    return { logFrames: row.log, checkpointedFrames: row.checkpointed };
  } finally {
    db.close();
  }
}
