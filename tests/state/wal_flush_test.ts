/** `WalFlusher`: fsyncs of a real database's WAL, coalesced; a replaced WAL is reopened. */
import { fdatasync, fstatSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { CHECKPOINT_EVERY_COMMITS, type SyncData, WalFlusher } from "../../src/state/wal_flush.ts";
import { checkpointWal } from "../../src/state/wal_checkpoint.ts";
import { assertEquals } from "../assert.ts";

async function withWalDb(fn: (db: DatabaseSync, path: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "coop-wal-" });
  const path = join(dir, "coop.db");
  const db = new DatabaseSync(path);
  try {
    db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; CREATE TABLE t (x)");
    await fn(db, path);
  } finally {
    if (db.isOpen) db.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** A real fdatasync that records the inode it synced and waits for `gate` first. */
function slowSync(log: number[], gate: () => Promise<void>): SyncData {
  return async (fd) => {
    await gate();
    log.push(fstatSync(fd).ino);
    await new Promise<void>((resolve, reject) => fdatasync(fd, (e) => e ? reject(e) : resolve()));
  };
}

Deno.test("wal flush: nothing committed, no fsync", async () => {
  await withWalDb(async (_db, path) => {
    const synced: number[] = [];
    const wal = new WalFlusher(path, { syncData: slowSync(synced, () => Promise.resolve()) });
    await wal.flush();
    assertEquals([synced.length, wal.syncs], [0, 0]);
    wal.close();
  });
});

Deno.test("wal flush: commits made during an fsync share the next one", async () => {
  await withWalDb(async (db, path) => {
    const synced: number[] = [];
    let open = () => {};
    const firstHeld = new Promise<void>((resolve) => open = resolve);
    let calls = 0;
    const wal = new WalFlusher(path, {
      syncData: slowSync(synced, () => ++calls === 1 ? firstHeld : Promise.resolve()),
    });
    db.exec("INSERT INTO t VALUES (1)");
    wal.committed();
    const first = wal.flush();
    const rest: Promise<void>[] = [];
    for (let i = 2; i <= 5; i++) {
      db.exec(`INSERT INTO t VALUES (${i})`);
      wal.committed();
      rest.push(wal.flush());
    }
    open();
    await Promise.all([first, ...rest]);
    assertEquals(wal.syncs, 2, "one fsync for the first commit, one for the four made during it");
    await wal.flush();
    assertEquals(wal.syncs, 2, "a flush with nothing new to cover does not fsync");
    const ino = Deno.statSync(`${path}-wal`).ino;
    assertEquals(synced, [ino, ino]);
    wal.close();
  });
});

Deno.test("wal flush: a WAL replaced after all connections closed is reopened", async () => {
  await withWalDb(async (db, path) => {
    const synced: number[] = [];
    const wal = new WalFlusher(path, { syncData: slowSync(synced, () => Promise.resolve()) });
    db.exec("INSERT INTO t VALUES (1)");
    wal.committed();
    await wal.flush();
    db.close(); // the last connection: SQLite checkpoints and deletes the WAL
    const again = new DatabaseSync(path);
    try {
      again.exec("INSERT INTO t VALUES (2)");
      wal.committed();
      await wal.flush();
      assertEquals(synced.at(-1), Deno.statSync(`${path}-wal`).ino, "the new WAL was synced");
    } finally {
      wal.close();
      again.close();
    }
  });
});

Deno.test("wal flush: with the connection, checkpoints run off the loop every so many commits", async () => {
  await withWalDb(async (db, path) => {
    const asked: string[] = [];
    let finish = () => {};
    const wal = new WalFlusher(path, {
      db,
      checkpoint: (p) => {
        asked.push(p);
        return new Promise((resolve) =>
          finish = () => resolve({ logFrames: 0, checkpointedFrames: 0 })
        );
      },
    });
    const pages = db.prepare("PRAGMA wal_autocheckpoint").get() as { wal_autocheckpoint: number };
    assertEquals(pages.wal_autocheckpoint, 10_000, "the connection's own is only a safety net");
    for (let i = 1; i < CHECKPOINT_EVERY_COMMITS; i++) wal.committed();
    assertEquals(asked, [], "not before the count");
    wal.committed();
    assertEquals(asked, [path]);
    for (let i = 0; i < 2 * CHECKPOINT_EVERY_COMMITS; i++) wal.committed();
    assertEquals(asked.length, 1, "one at a time");
    finish();
    await wal.checkpointsSettled();
    assertEquals(wal.checkpoints, 1);
    wal.committed();
    assertEquals(asked.length, 2, "the commits made meanwhile start the next one");
    finish();
    await wal.checkpointsSettled();
    wal.close();
  });
});

Deno.test("wal flush: the worker's checkpoint copies the WAL while the connection stays open", async () => {
  await withWalDb(async (db, path) => {
    const wal = new WalFlusher(path, { db });
    for (let i = 0; i < CHECKPOINT_EVERY_COMMITS; i++) {
      db.exec(`INSERT INTO t VALUES (${i})`);
      wal.committed();
    }
    await wal.checkpointsSettled();
    assertEquals(wal.checkpoints, 1);
    // Every frame the worker's connection saw was copied into the database file.
    const done = wal.lastCheckpoint!;
    assertEquals(done.logFrames >= CHECKPOINT_EVERY_COMMITS, true, `${done.logFrames} frames`);
    assertEquals(done.checkpointedFrames, done.logFrames);
    // The next commit starts the WAL over: it was all in the database.
    db.exec("INSERT INTO t VALUES (-1)");
    const after = checkpointWal(path);
    assertEquals(after.logFrames < done.logFrames, true, `${after.logFrames} frames after`);
    const reader = new DatabaseSync(path, { readOnly: true });
    try {
      const { n } = reader.prepare("SELECT COUNT(*) AS n FROM t").get() as { n: number };
      assertEquals(n, CHECKPOINT_EVERY_COMMITS + 1);
    } finally {
      reader.close();
    }
    wal.close();
  });
});
