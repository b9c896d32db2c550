/**
 * Pairing codes and the pairing store: the code's alphabet and format, hashed storage, the cap
 * on pending requests, expiry, denial, approval.
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { assert, assertEquals, assertMatch, assertThrows } from "../assert.ts";
import {
  hashPairingCode,
  newPairingCode,
  normalizePairingCode,
  PAIRING_ALPHABET,
} from "../../src/state/pairing_code.ts";
import { PairingError, PairingStore } from "../../src/state/pairing_store.ts";
import { migrate, openStateDb } from "../../src/state/state_db.ts";

Deno.test("pairing code: XXXX-XXXX from 32 symbols without look-alikes", () => {
  assertEquals(PAIRING_ALPHABET.length, 32);
  for (const c of "01IO") assert(!PAIRING_ALPHABET.includes(c), `${c} is ambiguous`);
  const seen = new Set<string>();
  for (let i = 0; i < 2000; i++) {
    const code = newPairingCode();
    assertMatch(code, /^[A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4}$/);
    seen.add(code);
  }
  assertEquals(seen.size, 2000, "2000 codes of 40 bits do not repeat");
  // Every symbol turns up: the low five bits of a byte pick among all 32.
  const used = new Set([...seen].join("").replaceAll("-", ""));
  assertEquals(used.size, 32);
});

Deno.test("pairing code: typed in any case, with or without the dash; anything else is not a code", () => {
  assertEquals(normalizePairingCode("abcd-efgh"), "ABCDEFGH");
  assertEquals(normalizePairingCode(" ABCD EFGH "), "ABCDEFGH");
  assertEquals(normalizePairingCode("ABCDEFG"), null);
  assertEquals(normalizePairingCode("ABCD-EFG0"), null, "0 is not in the alphabet");
  assertEquals(hashPairingCode("abcd-efgh"), hashPairingCode("ABCDEFGH"));
});

function store(): { store: PairingStore; db: DatabaseSync } {
  const db = new DatabaseSync(":memory:");
  migrate(db);
  return { store: new PairingStore(db), db };
}

const dave = { channel: "telegram", sender: "555", aliases: [], senderName: "Dave" };
const HOUR = 3_600_000;

Deno.test("pairing store: only the code's hash is stored", () => {
  const { store: s, db } = store();
  const code = newPairingCode();
  s.create(dave, code, { now: 0, expiresAt: HOUR }, 10);
  const dump = JSON.stringify(db.prepare("SELECT * FROM pairing_requests").all());
  assert(!dump.includes(code) && !dump.includes(code.replace("-", "")), dump);
  assert(dump.includes(hashPairingCode(code)));
});

Deno.test("pairing store: pending requests are capped; expired ones free their place", () => {
  const { store: s } = store();
  assert(s.create(dave, "AAAA-AAAA", { now: 0, expiresAt: HOUR }, 2));
  assert(s.create({ ...dave, sender: "556" }, "BBBB-BBBB", { now: 10, expiresAt: HOUR }, 2));
  assertEquals(
    s.create({ ...dave, sender: "557" }, "CCCC-CCCC", { now: 20, expiresAt: HOUR }, 2),
    null,
  );
  assertEquals(s.pending(30).map((r) => r.sender), ["555", "556"]);
  assertEquals(s.expire(HOUR).map((r) => r.sender), ["555", "556"]);
  assert(s.create({ ...dave, sender: "557" }, "CCCC-CCCC", { now: HOUR, expiresAt: 2 * HOUR }, 2));
  assertEquals(s.pendingFor("telegram", "555", HOUR), undefined);
});

Deno.test("pairing store: approve turns the request into a paired person, once", () => {
  const { store: s } = store();
  s.create({ ...dave, aliases: ["uuid-1"] }, "ABCD-EFGH", { now: 0, expiresAt: HOUR }, 10);
  const person = s.approve("abcd-efgh", { name: "dave", trust: "familiar" }, 5);
  assertEquals(person, {
    name: "dave",
    trust: "familiar",
    channel: "telegram",
    sender: "555",
    aliases: ["uuid-1"],
    senderName: "Dave",
    approvedAt: 5,
  });
  assertEquals(s.people(), [person]);
  assertEquals(s.pending(5), []);
  const again = assertThrows(
    () => s.approve("ABCD-EFGH", { name: "d2", trust: "familiar" }, 6),
    PairingError,
  );
  assertEquals((again as PairingError).code, "pairing.unknown_code");
});

Deno.test("pairing store: an expired code cannot be approved", () => {
  const { store: s } = store();
  s.create(dave, "ABCD-EFGH", { now: 0, expiresAt: HOUR }, 10);
  const error = assertThrows(
    () => s.approve("ABCD-EFGH", { name: "dave", trust: "familiar" }, HOUR),
    PairingError,
  );
  assertEquals((error as PairingError).code, "pairing.unknown_code");
  assertEquals(s.people(), []);
});

Deno.test("pairing store: a denied request keeps its sender waiting without a working code", () => {
  const { store: s } = store();
  s.create(dave, "ABCD-EFGH", { now: 0, expiresAt: HOUR }, 10);
  assertEquals(s.deny("ABCD-EFGH", 1).denied, true);
  assertEquals(s.pendingFor("telegram", "555", 2)?.denied, true);
  const error = assertThrows(
    () => s.approve("ABCD-EFGH", { name: "dave", trust: "familiar" }, 3),
    PairingError,
  );
  assertEquals((error as PairingError).code, "pairing.unknown_code");
});

Deno.test("pairing store: the schema migrates on a database from before pairing", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const old = new DatabaseSync(join(dir, "coop.db"));
    migrate(old, (await import("../../src/state/state_db.ts")).MIGRATIONS.slice(0, 2));
    old.close();
    const db = openStateDb(dir);
    assertEquals(new PairingStore(db).people(), []);
    db.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
