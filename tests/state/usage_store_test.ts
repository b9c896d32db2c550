/**
 * `UsageStore` with the gateway's `WalFlusher`: its writes are committed without their own
 * fsync and wait for the turn's shared one (group commit) — the next `flush()` fsyncs the WAL
 * once for all of them — and the connection is left at `synchronous = FULL` for everyone else.
 */
import { join } from "node:path";
import { openStateDb } from "../../src/state/state_db.ts";
import { UsageStore } from "../../src/state/usage_store.ts";
import { WalFlusher } from "../../src/state/wal_flush.ts";
import { assertEquals } from "../assert.ts";

const FULL = 2;

Deno.test("usage store: counter writes join the group commit and leave synchronous = FULL", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-usage-" });
  const db = openStateDb(dir);
  const synced: number[] = [];
  const wal = new WalFlusher(join(dir, "coop.db"), {
    syncData: (fd) => Promise.resolve(void synced.push(fd)),
  });
  try {
    const usage = new UsageStore(db, () => 1_000, wal);
    const synchronous = () =>
      (db.prepare("PRAGMA synchronous").get() as { synchronous: number })
        .synchronous;
    const id = usage.beginTurn({ person: "bob", channel: "http" });
    usage.addTokens(id, 120);
    usage.addSandboxSeconds(id, 0.25);
    assertEquals(synchronous(), FULL, "the connection's other writers still fsync their commits");
    await wal.flush();
    assertEquals(synced.length, 1, "the turn's writes waited for one shared fsync");
    await wal.flush();
    assertEquals(synced.length, 1, "nothing new was committed, so no fsync");
    assertEquals(usage.totals({ person: "bob" }, 60_000), {
      turns: 1,
      tokens: 120,
      sandboxSeconds: 0.25,
    });
  } finally {
    wal.close();
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("usage store: without a WalFlusher every write is its own durable commit", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-usage-" });
  const db = openStateDb(dir);
  try {
    const usage = new UsageStore(db, () => 1_000);
    const id = usage.beginTurn({ person: "bob", channel: "http" });
    usage.addSandboxSeconds(id, 1);
    assertEquals(
      (db.prepare("PRAGMA synchronous").get() as { synchronous: number }).synchronous,
      FULL,
    );
    assertEquals(usage.totals({ person: "bob" }, 60_000).sandboxSeconds, 1);
  } finally {
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("usage store: a turn's additions are one commit at the flush, and reads see them before", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-usage-" });
  const db = openStateDb(dir);
  const wal = new WalFlusher(join(dir, "coop.db"), { syncData: () => Promise.resolve() });
  // Another process's view (`coop usage`): only what is committed.
  const reader = openStateDb(dir);
  const committed = (id: number) => ({
    ...reader.prepare("SELECT tokens, sandbox_us FROM usage_turns WHERE id = ?").get(id),
  });
  try {
    const usage = new UsageStore(db, () => 1_000, wal);
    const id = usage.beginTurn({ person: "bob", channel: "http" });
    const changes = () => (db.prepare("SELECT total_changes() AS n").get() as { n: number }).n;
    const before = changes();
    for (let call = 0; call < 10; call++) {
      usage.addTokens(id, 100);
      usage.addSandboxSeconds(id, 0.5);
    }
    assertEquals(changes(), before, "nothing written per model response or command");
    assertEquals(committed(id), { tokens: 0, sandbox_us: 0 });
    // The gateway's own reads (a budget check at the next turn's door) include them.
    assertEquals(usage.totals({ person: "bob" }, 60_000), {
      turns: 1,
      tokens: 1000,
      sandboxSeconds: 5,
    });
    usage.addTokens(id, 1);
    await wal.flush();
    assertEquals(
      changes(),
      before + 2,
      "one update for the additions before the read, one at the flush",
    );
    assertEquals(committed(id), { tokens: 1001, sandbox_us: 5_000_000 });
  } finally {
    reader.close();
    wal.close();
    db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
