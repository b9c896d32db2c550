import { fileURLToPath } from "node:url";
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import {
  isSessionId,
  newSessionId,
  type SessionKey,
  SessionStore,
  SessionStoreError,
} from "../../src/state/session_store.ts";
import {
  migrate,
  MIGRATIONS,
  openStateDb,
  schemaVersion,
  StateDbError,
} from "../../src/state/state_db.ts";

async function withStateDir(fn: (dir: string) => Promise<void> | void): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "coop-sessions-" });
  try {
    await fn(join(root, "state"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
}

const bob: SessionKey = { channel: "http", user: "bob", session: "s1" };

function say(text: string, role: "user" | "assistant" = "user") {
  return { role, content: text, principal: "bob", trust: "full" as const };
}

Deno.test("session ids are random, URL-safe and accepted by isSessionId", () => {
  const ids = new Set(Array.from({ length: 200 }, () => newSessionId()));
  strictEqual(ids.size, 200);
  for (const id of ids) {
    ok(/^[A-Za-z0-9_-]{22}$/.test(id), id);
    ok(isSessionId(id));
  }
  for (const bad of ["", "a/b", "a b", "x".repeat(65), "é"]) strictEqual(isSessionId(bad), false);
});

Deno.test("append then history returns the messages in order with JSON content intact", () =>
  withStateDir((dir) => {
    const db = openStateDb(dir);
    let clock = 1000;
    const store = new SessionStore(db, () => clock++);
    const toolCall = {
      type: "tool_use",
      id: "t1",
      name: "bash",
      input: { command: "id" },
    };
    store.append(bob, say("hello"));
    store.append(bob, {
      ...say("", "assistant"),
      content: [{ type: "text", text: "hi" }, toolCall],
    });
    store.append(bob, {
      role: "tool",
      content: { tool_use_id: "t1", content: "uid=0", is_error: false },
      principal: "bob",
      trust: "full",
    });
    const history = store.history(bob);
    deepStrictEqual(history.map((m) => m.role), ["user", "assistant", "tool"]);
    deepStrictEqual(history[1].content, [{ type: "text", text: "hi" }, toolCall]);
    deepStrictEqual(history.map((m) => m.createdAt), [1000, 1001, 1002]);
    ok(history[0].id < history[1].id && history[1].id < history[2].id);
    strictEqual(history[2].trust, "full");
    db.close();
  }));

Deno.test("history(limit) returns the newest messages, oldest first", () =>
  withStateDir((dir) => {
    const db = openStateDb(dir);
    const store = new SessionStore(db);
    for (let i = 0; i < 10; i++) store.append(bob, say(`m${i}`));
    deepStrictEqual(store.history(bob, 3).map((m) => m.content), ["m7", "m8", "m9"]);
    throws(() => store.history(bob, 0), (e: unknown) =>
      e instanceof SessionStoreError && e.code === "session.invalid_limit");
    db.close();
  }));

Deno.test("sessions are separated by channel, user and session id", () =>
  withStateDir((dir) => {
    const db = openStateDb(dir);
    const store = new SessionStore(db);
    const keys: SessionKey[] = [
      bob,
      { ...bob, session: "s2" },
      { ...bob, user: "carol" },
      { ...bob, channel: "terminal" },
    ];
    keys.forEach((key, i) => store.append(key, say(`only in ${i}`)));
    keys.forEach((key, i) =>
      deepStrictEqual(store.history(key).map((m) => m.content), [`only in ${i}`])
    );
    deepStrictEqual(store.history({ ...bob, session: "unknown" }), []);
    db.close();
  }));

Deno.test("clear deletes one session and nothing else", () =>
  withStateDir((dir) => {
    const db = openStateDb(dir);
    const store = new SessionStore(db);
    const other = { ...bob, session: "s2" };
    store.append(bob, say("a"));
    store.append(other, say("b"));
    strictEqual(store.clear(bob), true);
    deepStrictEqual(store.history(bob), []);
    strictEqual(store.history(other).length, 1);
    strictEqual(store.clear(bob), false);
    const orphans = db.prepare(
      "SELECT COUNT(*) AS n FROM messages WHERE session_ref NOT IN (SELECT id FROM sessions)",
    ).get() as { n: number };
    strictEqual(orphans.n, 0, "clear leaves no orphaned messages");
    store.append(bob, say("after clear"));
    deepStrictEqual(store.history(bob).map((m) => m.content), ["after clear"]);
    db.close();
  }));

Deno.test("invalid keys and messages are refused with stable codes", () =>
  withStateDir((dir) => {
    const db = openStateDb(dir);
    const store = new SessionStore(db);
    const cases: Array<[string, () => unknown, string]> = [
      ["bad id", () => store.append({ ...bob, session: "a/b" }, say("x")), "session.invalid_id"],
      ["no user", () => store.append({ ...bob, user: "" }, say("x")), "session.invalid_key"],
      [
        "bad role",
        () => store.append(bob, { ...say("x"), role: "system" as "user" }),
        "session.invalid_role",
      ],
      [
        "bad trust",
        () => store.append(bob, { ...say("x"), trust: "root" as "owner" }),
        "session.invalid_trust",
      ],
    ];
    for (const [label, run, code] of cases) {
      throws(run, (e: unknown) => e instanceof SessionStoreError && e.code === code, label);
    }
    deepStrictEqual(store.history(bob), [], "nothing was written by a refused append");
    db.close();
  }));

Deno.test("state dir is 0700, the database and its WAL are 0600, WAL and FULL sync are on", () =>
  withStateDir((dir) => {
    const db = openStateDb(dir);
    new SessionStore(db).append(bob, say("x"));
    strictEqual(Deno.statSync(dir).mode! & 0o777, 0o700);
    for (const file of ["coop.db", "coop.db-wal"]) {
      strictEqual(Deno.statSync(join(dir, file)).mode! & 0o777, 0o600, file);
    }
    strictEqual(db.prepare("PRAGMA journal_mode").get()?.journal_mode, "wal");
    // 2 = FULL.
    strictEqual(db.prepare("PRAGMA synchronous").get()?.synchronous, 2);
    db.close();
  }));

Deno.test("an existing state dir with loose permissions is tightened to 0700", () =>
  withStateDir((dir) => {
    Deno.mkdirSync(dir, { mode: 0o755 });
    Deno.chmodSync(dir, 0o755);
    openStateDb(dir).close();
    strictEqual(Deno.statSync(dir).mode! & 0o777, 0o700);
  }));

Deno.test("migrations run once, record their version, and survive reopening", () =>
  withStateDir((dir) => {
    const db = openStateDb(dir);
    const latest = MIGRATIONS.at(-1)!.version;
    strictEqual(schemaVersion(db), latest);
    new SessionStore(db).append(bob, say("kept"));
    db.close();
    const again = openStateDb(dir);
    strictEqual(schemaVersion(again), latest);
    const rows = again.prepare("SELECT version FROM schema_version ORDER BY version").all();
    deepStrictEqual(rows.map((r) => r.version), MIGRATIONS.map((m) => m.version));
    deepStrictEqual(new SessionStore(again).history(bob).map((m) => m.content), ["kept"]);
    again.close();
  }));

Deno.test("a database from a newer Coop is refused, not downgraded", () => {
  const db = new DatabaseSync(":memory:");
  migrate(db);
  db.prepare("INSERT INTO schema_version VALUES (?, 'future', 0)").run(MIGRATIONS.length + 1);
  throws(
    () => migrate(db),
    (e: unknown) => e instanceof StateDbError && e.code === "state.schema_too_new",
  );
  db.close();
});

Deno.test("a failing migration rolls back and reports its version", () => {
  const db = new DatabaseSync(":memory:");
  const steps = [
    { version: 1, description: "ok", sql: "CREATE TABLE a (x)" },
    { version: 2, description: "broken", sql: "CREATE TABLE b (y); CREATE TABLE a (x)" },
  ];
  throws(
    () => migrate(db, steps),
    (e: unknown) =>
      e instanceof StateDbError && e.code === "state.migration_failed" &&
      /migration 2/.test(e.message),
  );
  strictEqual(schemaVersion(db), 1);
  const b = db.prepare("SELECT name FROM sqlite_master WHERE name = 'b'").get();
  strictEqual(b, undefined, "the failed step left nothing behind");
  db.close();
});

Deno.test("a non-durable append is committed, leaves FULL in force, and sync() checkpoints it", () =>
  withStateDir((dir) => {
    const db = openStateDb(dir);
    const statements: string[] = [];
    const exec = db.exec.bind(db);
    db.exec = (sql: string) => {
      statements.push(sql);
      exec(sql);
    };
    const store = new SessionStore(db);
    const checkpoints = () => statements.filter((s) => s.includes("wal_checkpoint")).length;
    store.append(bob, say("durable"));
    store.sync();
    strictEqual(checkpoints(), 0, "nothing to sync after a durable append");

    store.append(bob, say("step", "assistant"), { durable: false });
    strictEqual(db.prepare("PRAGMA synchronous").get()?.synchronous, 2, "FULL again after it");
    deepStrictEqual(store.history(bob).map((m) => m.content), ["durable", "step"]);
    const before = db.prepare("PRAGMA wal_checkpoint(NOOP)").get() as Record<string, number>;
    ok(before.log > before.checkpointed, "the step is in the WAL, not yet checkpointed");
    store.sync();
    strictEqual(checkpoints(), 1);
    const after = db.prepare("PRAGMA wal_checkpoint(NOOP)").get() as Record<string, number>;
    strictEqual(after.checkpointed, after.log, "sync() checkpointed every frame");
    store.sync();
    strictEqual(checkpoints(), 1, "a second sync() has nothing left to do");

    store.append(bob, say("another step", "assistant"), { durable: false });
    store.append(bob, say("the reply", "assistant"));
    store.sync();
    strictEqual(checkpoints(), 1, "a durable append's fsync covered the step before it");
    db.close();
  }));

Deno.test("SIGKILL while appending: every acknowledged message survives, database intact", async () => {
  const root = await Deno.makeTempDir({ prefix: "coop-sessions-kill-" });
  const stateDir = join(root, "state");
  try {
    const fixture = fileURLToPath(
      new URL("../gateway/fixtures/session_append_loop.ts", import.meta.url),
    );
    // "intermediate": two of three appends are non-durable, like a turn's tool steps; a crash
    // of Coop (SIGKILL) must lose none of those either, only a power cut could.
    for (
      const [killAfter, mode] of [[1, ""], [150, ""], [400, ""], [150, "intermediate"]] as const
    ) {
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", "--quiet", fixture, stateDir, mode],
        stdout: "piped",
        stderr: "inherit",
      }).spawn();
      const acked: number[] = [];
      let buffer = "";
      const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
      while (acked.length < killAfter) {
        const { value, done } = await reader.read();
        if (done) throw new Error("the appending child exited early");
        buffer += value;
        const lines = buffer.split("\n");
        buffer = lines.pop()!;
        for (const line of lines) acked.push(Number(line.split(" ")[1]));
      }
      child.kill("SIGKILL");
      await reader.cancel();
      const status = await child.status;
      strictEqual(status.signal, "SIGKILL");

      const db = openStateDb(stateDir);
      strictEqual(db.prepare("PRAGMA integrity_check").get()?.integrity_check, "ok");
      const store = new SessionStore(db);
      const ids = new Set(
        store.history({ channel: "http", user: "bob", session: "durable" }, 1_000_000).map((m) =>
          m.id
        ),
      );
      for (const id of acked) ok(ids.has(id), `acknowledged message ${id} is missing`);
      db.close();
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
