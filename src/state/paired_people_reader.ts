/**
 * Reads the paired people of a state directory without changing anything (`coop check`): no
 * directory or database is created, no migration runs.
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { errorMessage } from "../errors/coop_error.ts";
import { type PairedPerson, PairingStore } from "./pairing_store.ts";
import { STATE_DB_FILE } from "./state_db.ts";

/** The paired people, or why they could not be read; none when there is no database yet. */
export function readPairedPeople(stateDir: string): PairedPerson[] | { problem: string } {
  const file = join(stateDir, STATE_DB_FILE);
  if (!existsSync(file)) return [];
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(file, { readOnly: true });
    const table = db.prepare(
      "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'paired_people'",
    ).get();
    // A database from before pairing: nobody is paired in it yet.
    return table === undefined ? [] : new PairingStore(db).people();
  } catch (error) {
    return { problem: `cannot read paired people from ${file}: ${errorMessage(error)}` };
  } finally {
    db?.close();
  }
}
