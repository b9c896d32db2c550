/**
 * Reads which chat sessions exist in a state directory without changing anything (`coop
 * sandbox clean` keeps the session uppers of these): no directory or database is created.
 * @module
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { errorMessage } from "../errors/coop_error.ts";
import type { SessionKey } from "./session_store.ts";
import { STATE_DB_FILE } from "./state_db.ts";

/** Every session's key, or why they could not be read; none when there is no database yet. */
export function readSessionKeys(stateDir: string): SessionKey[] | { problem: string } {
  const file = join(stateDir, STATE_DB_FILE);
  if (!existsSync(file)) return [];
  let db: DatabaseSync | undefined;
  try {
    db = new DatabaseSync(file, { readOnly: true });
    return db.prepare("SELECT channel, user, session FROM sessions").all().map((row) => ({
      channel: String(row.channel),
      user: String(row.user),
      session: String(row.session),
    }));
  } catch (error) {
    return { problem: `cannot read sessions from ${file}: ${errorMessage(error)}` };
  } finally {
    db?.close();
  }
}
