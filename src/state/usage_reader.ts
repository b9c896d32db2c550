/**
 * Reads the usage counters of a state directory without changing anything (`coop explain`): no
 * directory or database is created, no migration runs; no database yet reads as no usage.
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { errorMessage } from "../errors/coop_error.ts";
import { migrate, STATE_DB_FILE } from "./state_db.ts";
import { UsageStore } from "./usage_store.ts";

/** Calls `read` with the usage counters of `stateDir`, or says why they could not be read. */
export function readUsage<T>(
  stateDir: string,
  read: (usage: UsageStore) => T,
): T | { problem: string } {
  const file = join(stateDir, STATE_DB_FILE);
  let db: DatabaseSync | undefined;
  try {
    db = existsSync(file) ? new DatabaseSync(file, { readOnly: true }) : undefined;
    const table = db?.prepare(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'usage_turns'",
    ).get();
    if (db === undefined || table === undefined) {
      // No database, or one from before budgets: nothing was counted yet.
      db?.close();
      db = new DatabaseSync(":memory:");
      migrate(db);
    }
    return read(new UsageStore(db));
  } catch (error) {
    return { problem: `cannot read usage from ${file}: ${errorMessage(error)}` };
  } finally {
    db?.close();
  }
}
