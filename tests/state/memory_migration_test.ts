/**
 * The personal-store migration on a database the previous schema (version 2) created and
 * filled: every memory keeps its id, provenance and search entry, and the new store works.
 */
import { deepStrictEqual, strictEqual, throws } from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { migrate, MIGRATIONS, openStateDb, schemaVersion } from "../../src/state/state_db.ts";
import { MemoryDatabase } from "../../src/state/memory_store.ts";

/** A state database file exactly as a Coop with schema version 2 left it, with memories. */
function oldDatabase(dir: string): string {
  const file = join(dir, "coop.db");
  const db = new DatabaseSync(file);
  db.exec("PRAGMA journal_mode = WAL");
  migrate(db, MIGRATIONS.filter((m) => m.version <= 2));
  strictEqual(schemaVersion(db), 2);
  const insert = db.prepare(
    `INSERT INTO memories (store, text, author, trust, channel, created_at)
     VALUES (?, ?, ?, ?, ?, ?)`,
  );
  insert.run("shared", "Bob's bike is blue", "bob", "inner", "http", 1000);
  insert.run("private", "the spare key is under the pot", "alice", "owner", "terminal", 2000);
  insert.run("social", "the book club meets on Thursdays", "carol", "familiar", "telegram", 3000);
  // A forgotten memory leaves a gap in the ids; the migration must not close it.
  db.exec("DELETE FROM memories WHERE id = 2");
  insert.run("private", "the alarm code is 4711", "alice", "owner", "terminal", 4000);
  db.close();
  return file;
}

Deno.test("migration 3: an old database keeps every memory, id and search entry", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-migrate-" });
  try {
    oldDatabase(dir);
    const db = openStateDb(dir);
    try {
      strictEqual(schemaVersion(db), MIGRATIONS.at(-1)!.version);
      const memories = new MemoryDatabase(db, () => 5000);
      deepStrictEqual(
        memories.list().map((m) => [m.id, m.store, m.author, m.channel, m.trust, m.person]),
        [
          [4, "private", "alice", "terminal", "owner", undefined],
          [3, "social", "carol", "telegram", "familiar", undefined],
          [1, "shared", "bob", "http", "inner", undefined],
        ],
      );
      // The full-text index still points at the right rows, and a deleted one stays gone.
      deepStrictEqual(memories.search("bike", ["shared"], 5).map((h) => h.id), [1]);
      deepStrictEqual(memories.search("key", ["private"], 5), []);
      deepStrictEqual(memories.search("alarm code", ["private"], 5).map((h) => h.id), [4]);
      // New memories continue after the highest id; personal ones name their person.
      const id = memories.write({
        store: "personal",
        text: "Bob's dentist is on Monday",
        author: "bob",
        trust: "inner",
        channel: "http",
      });
      strictEqual(id, 5);
      deepStrictEqual(memories.get(id)?.person, "bob");
      deepStrictEqual(memories.search("dentist", [], 5, ["bob"]).map((h) => h.id), [5]);
      deepStrictEqual(memories.search("dentist", [], 5, ["carol"]), []);
      // Forgetting removes the search entry too.
      strictEqual(memories.remove(1, "test"), true);
      deepStrictEqual(memories.search("bike", ["shared"], 5), []);
      // The schema still refuses a personal memory without a person, or a tier one with one.
      throws(() =>
        db.prepare(
          `INSERT INTO memories (store, person, text, author, trust, channel, created_at)
           VALUES ('personal', NULL, 'x', 'bob', 'inner', 'http', 1)`,
        ).run(), /CHECK constraint failed/);
      throws(() =>
        db.prepare(
          `INSERT INTO memories (store, person, text, author, trust, channel, created_at)
           VALUES ('shared', 'bob', 'x', 'bob', 'inner', 'http', 1)`,
        ).run(), /CHECK constraint failed/);
    } finally {
      db.close();
    }
    // Opening again is a no-op: nothing is migrated twice.
    const again = openStateDb(dir);
    strictEqual(new MemoryDatabase(again).list().length, 3);
    again.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
