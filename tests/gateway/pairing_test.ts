/**
 * Pairing through `Gateway.handle`: an unknown sender in a direct Telegram or Signal chat gets one
 * pairing reply and no model call; the code is re-sent at most once per interval, expires, and
 * the pending requests are capped; an approval (by `coop pairing approve` on its own database
 * connection, or the owner's `/approve`) takes effect at the sender's next message.
 */
import { assertFamiliarOffer } from "./fixtures/people_gateway.ts";
import { join } from "node:path";
import { assert, assertEquals, assertMatch, assertNotEquals, assertRejects } from "../assert.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import {
  PAIRING_RESEND_INTERVAL_MS,
  PairingRequiredError,
} from "../../src/gateway/pairing_gate.ts";
import { pairingCommand } from "../../src/cli/pairing_command.ts";
import type { IncomingMessage } from "../../src/gateway/turn_handler.ts";
import { withPeopleGateway } from "./fixtures/people_gateway.ts";
import { BudgetExceededError } from "../../src/gateway/budget_gate.ts";
import { openStateDb } from "../../src/state/state_db.ts";
import { MemoryDatabase } from "../../src/state/memory_store.ts";

const MAIN = new URL("../../src/cli/main.ts", import.meta.url).pathname;

const CODE = /\b([A-HJ-NP-Z2-9]{4}-[A-HJ-NP-Z2-9]{4})\b/;

const dm = (sender: string, text: string, extra: Partial<IncomingMessage> = {}) => ({
  channel: "telegram",
  sender,
  text,
  ...extra,
});

/** The pairing reply's code, from the refusal the gateway threw. */
async function pairingCode(promise: Promise<unknown>): Promise<string> {
  const error = await assertRejects(() => promise, PairingRequiredError);
  assertEquals(error.code, "gateway.pairing_required");
  assert(!CODE.test(error.message), "the logged message never holds the code");
  const code = CODE.exec(error.reply)?.[1];
  assert(code, error.reply);
  return code;
}

/** Runs `coop pairing …` in this process, on its own connection to the test's database. */
async function cli(
  dir: string,
  ...args: string[]
): Promise<{ code: number; out: string; err: string }> {
  let out = "";
  let err = "";
  const code = await pairingCommand([...args, "--config", join(dir, "coop.toml")], {
    out: (t) => out += t,
    err: (t) => err += t,
    now: Date.now,
  });
  return { code, out, err };
}

Deno.test("pairing: an unknown sender gets one code and no model call; approved, they are answered at familiar", async () => {
  await withPeopleGateway([format.text(["Hello Dave."])], async ({ gateway, server, dir }) => {
    const code = await pairingCode(
      gateway.handle(dm("555", "hi, who are you?", { senderName: "Dave Smith" })),
    );
    assertEquals(server.requests.length, 0, "no request reached the model server");
    const listed = await cli(dir, "list", "--json");
    const report = JSON.parse(listed.out);
    assertEquals(report.pending.length, 1);
    assertEquals(report.pending[0].channel, "telegram");
    assertEquals(report.pending[0].sender, "555");
    assertEquals(report.pending[0].senderName, "Dave Smith");
    const approved = await cli(dir, "approve", code.toLowerCase());
    assertEquals(approved.code, 0, approved.err);
    assertMatch(approved.out, /approved telegram:555 as dave-smith \(trust familiar\)/);
    const outcome = await gateway.handle(dm("555", "hello again"));
    assertEquals(outcome.reply, "Hello Dave.");
    assertEquals(server.requests.length, 1);
    assertFamiliarOffer(format.toolNames(server.requests[0].body));
    assertMatch(
      String(server.requests[0].body.system),
      /talking with dave-smith \(trust: familiar\)/,
    );
  });
});

Deno.test("pairing: no new code per message; the pending one again after the interval, then silence", async () => {
  await withPeopleGateway([], async ({ gateway, server, advance }) => {
    const code = await pairingCode(gateway.handle(dm("555", "one")));
    const second = await gateway.handle(dm("555", "two"));
    assertEquals(second.silent, true);
    assertEquals(second.reply, "");
    advance(PAIRING_RESEND_INTERVAL_MS);
    assertEquals(await pairingCode(gateway.handle(dm("555", "three"))), code);
    assertEquals((await gateway.handle(dm("555", "four"))).silent, true);
    assertEquals(gateway.pairing.pending(Date.now() + PAIRING_RESEND_INTERVAL_MS).length, 1);
    assertEquals(server.requests.length, 0);
  });
});

Deno.test("pairing: a code expires after [pairing] code_ttl; the next message gets a new one", async () => {
  const extra = `\n[pairing]\ncode_ttl = "5m"\n`;
  await withPeopleGateway([], async ({ gateway, dir, advance }) => {
    const first = await pairingCode(gateway.handle(dm("555", "hi")));
    advance(5 * 60_000);
    const second = await pairingCode(gateway.handle(dm("555", "hi again")));
    assertNotEquals(first, second);
    const stale = await cli(dir, "approve", first);
    assertEquals(stale.code, 1);
    assertMatch(stale.err, /no pending pairing request has the code/);
  }, { extra });
});

Deno.test("pairing: pending requests are capped; a newcomer past the cap gets nothing", async () => {
  const extra = `\n[pairing]\nmax_pending = 1\n`;
  await withPeopleGateway([], async ({ gateway, server }) => {
    await pairingCode(gateway.handle(dm("555", "hi")));
    const capped = await gateway.handle(dm("556", "hi"));
    assertEquals(capped.silent, true);
    assertEquals(gateway.pairing.pending(Date.now()).map((r) => r.sender), ["555"]);
    assertEquals(server.requests.length, 0);
  }, { extra });
});

Deno.test("pairing: a denied sender hears nothing more and gets no new code until it would have expired", async () => {
  await withPeopleGateway([], async ({ gateway, dir, advance }) => {
    const code = await pairingCode(gateway.handle(dm("555", "hi")));
    const denied = await cli(dir, "deny", code);
    assertEquals(denied.code, 0, denied.err);
    advance(PAIRING_RESEND_INTERVAL_MS);
    assertEquals((await gateway.handle(dm("555", "hello?"))).silent, true);
    advance(3_600_000);
    await pairingCode(gateway.handle(dm("555", "hello??")));
  });
});

Deno.test("pairing: the owner's /approve (with --name and --trust) works from a direct chat; nobody else's", async () => {
  const script = [format.text(["hi"]), format.text(["hi erin"])];
  await withPeopleGateway(script, async ({ gateway, server }) => {
    const code = await pairingCode(gateway.handle(dm("777", "hello")));
    const bob = await gateway.handle({ channel: "http", sender: "bob", text: `/approve ${code}` });
    assertMatch(bob.reply, /Only the owner/);
    const owner = await gateway.handle({
      channel: "terminal",
      sender: "default",
      text: `/approve ${code} --trust owner`,
    });
    assertMatch(owner.reply, /never gives "owner" trust/);
    const ok = await gateway.handle(dm("100", `/approve ${code} --name erin --trust inner`));
    assertEquals(ok.reply, "Approved telegram:777 as erin (trust inner).");
    assertEquals(server.requests.length, 0, "commands never reach the model");
    await gateway.handle(dm("777", "run something"));
    assert(format.toolNames(server.requests[0].body).includes("bash"), "inner: bash offered");
    const status = await gateway.handle({
      channel: "terminal",
      sender: "default",
      text: "/status",
    });
    assertMatch(status.reply, /Paired people: erin \(inner, telegram:777\)/);
    assertMatch(
      status.reply,
      /Configured users: alice \(owner\), carol \(familiar\), bob \(full\)/,
    );
    const carol = await gateway.handle({ channel: "http", sender: "carol", text: "/status" });
    assertEquals(carol.reply, "user carol · trust familiar · http:carol");
  });
});

Deno.test("pairing: names are checked like config user names and never shadow a configured user", async () => {
  await withPeopleGateway([], async ({ gateway, dir }) => {
    const code = await pairingCode(gateway.handle(dm("555", "hi", { senderName: "Bob" })));
    const taken = await cli(dir, "approve", code, "--name", "bob");
    assertEquals(taken.code, 1);
    assertMatch(taken.err, /"bob" is already the name of a configured user/);
    const invalid = await cli(dir, "approve", code, "--name", "Bob Jones");
    assertMatch(invalid.err, /must be 1-32 characters of a-z/);
    const reserved = await cli(dir, "approve", code, "--name", "group-x");
    assertMatch(reserved.err, /starts with "group-"/);
    const owner = await cli(dir, "approve", code, "--trust", "owner");
    assertMatch(owner.err, /never gives "owner" trust/);
    const derived = await cli(dir, "approve", code);
    assertEquals(derived.code, 0, derived.err);
    assertMatch(
      derived.out,
      /as bob-2 \(trust familiar\)/,
      "derived from the name, bob being taken",
    );
  });
});

Deno.test("pairing: a Signal sender approved by number is the same person by uuid", async () => {
  await withPeopleGateway([format.text(["hi"])], async ({ gateway, server, dir }) => {
    const signal = { channel: "signal", senderAliases: ["uuid-frank"], senderName: "Frank" };
    const code = await pairingCode(gateway.handle({ ...signal, sender: "+4912345", text: "hi" }));
    assertEquals((await cli(dir, "approve", code)).code, 0);
    await gateway.handle({ channel: "signal", sender: "uuid-frank", text: "me again" });
    assertMatch(String(server.requests[0].body.system), /talking with frank \(trust: familiar\)/);
  });
});

Deno.test("pairing: only direct messenger chats pair; HTTP and disabled pairing leave unknown senders public", async () => {
  const script = [format.text(["hello http"]), format.text(["hello tg"])];
  await withPeopleGateway(script, async ({ gateway, server }) => {
    assertEquals(
      (await gateway.handle({ channel: "http", sender: "zed", text: "hi" })).reply,
      "hello http",
    );
    assertEquals(format.toolNames(server.requests[0].body), []);
    assertEquals((await gateway.handle(dm("555", "hi"))).reply, "hello tg");
    assertEquals(format.toolNames(server.requests[1].body), []);
    assertEquals(gateway.pairing.pending(Date.now()), []);
  }, { extra: "\n[pairing]\nenabled = false\n" });
});

Deno.test("pairing: a paired person whose name a configured user took since is no longer recognised", async () => {
  await withPeopleGateway([], async ({ gateway, server }) => {
    // As if carol had been paired before the owner added [[users]] name = "carol" to coop.toml.
    const now = Date.now();
    gateway.pairing.create({ channel: "telegram", sender: "888", aliases: [] }, "ABCD-EFGH", {
      now,
      expiresAt: now + 60_000,
    }, 5);
    gateway.pairing.approve("ABCD-EFGH", { name: "carol", trust: "familiar" }, now);
    await assertRejects(() => gateway.handle(dm("888", "it's me, carol")), PairingRequiredError);
    assertEquals(server.requests.length, 0, "never routed as the configured carol");
  });
});

Deno.test("pairing: coop pairing remove forgets a paired person; their next message is unknown again", async () => {
  await withPeopleGateway([format.text(["hi"])], async ({ gateway, server, dir }) => {
    const code = await pairingCode(gateway.handle(dm("555", "hi")));
    assertEquals((await cli(dir, "approve", code, "--name", "dave")).code, 0);
    await gateway.handle(dm("555", "hello"));
    assertEquals(server.requests.length, 1);
    const removed = await cli(dir, "remove", "dave");
    assertEquals(removed.code, 0, removed.err);
    await pairingCode(gateway.handle(dm("555", "hello?")));
    assertEquals(server.requests.length, 1);
    const again = await cli(dir, "remove", "dave");
    assertEquals(again.code, 1);
    assertMatch(again.err, /nobody paired is named "dave"/);
  });
});

Deno.test("pairing: [pairing.budget] is each paired person's own; coop usage shows it", async () => {
  await withPeopleGateway([format.text(["one"]), format.text(["erin's"])], async (t) => {
    const { gateway, server, dir } = t;
    const dave = await pairingCode(gateway.handle(dm("555", "hi")));
    assertEquals((await cli(dir, "approve", dave, "--name", "dave")).code, 0);
    const erin = await pairingCode(gateway.handle(dm("777", "hi")));
    assertEquals((await cli(dir, "approve", erin, "--name", "erin")).code, 0);
    assertEquals((await gateway.handle(dm("555", "first"))).reply, "one");
    // dave's second turn in the hour is refused at the door: no model request.
    const refused = await assertRejects(
      () => gateway.handle(dm("555", "second")),
      BudgetExceededError,
    );
    assertMatch(refused.message, /\[pairing\] budget\.turns_per_hour = 1/);
    assertEquals(server.requests.length, 1);
    // erin's budget is her own, not dave's spent one.
    assertEquals((await gateway.handle(dm("777", "mine"))).reply, "erin's");
    const usage = await new Deno.Command(Deno.execPath(), {
      args: ["run", "-A", "--quiet", MAIN, "usage", "--json", "--config", join(dir, "coop.toml")],
    }).output();
    const report = JSON.parse(new TextDecoder().decode(usage.stdout)) as {
      people: { name: string; used: { turns_per_hour: number }; budget: object; spent: string[] }[];
    };
    const line = report.people.find((p) => p.name === "dave")!;
    assertEquals(line.budget, { turns_per_hour: 1 });
    assertEquals(line.used.turns_per_hour, 1);
    assertEquals(line.spent, ["turns_per_hour"]);
  }, { extra: "\n[pairing.budget]\nturns_per_hour = 1\n" });
});

Deno.test("pairing: a newcomer's derived name never takes over what a removed person left (workspace, memories)", async () => {
  await withPeopleGateway([format.text(["hi"])], async ({ gateway, dir }) => {
    // The Dave removed before left his directory and a personal memory behind.
    const first = await pairingCode(gateway.handle(dm("555", "hi", { senderName: "Dave" })));
    assertEquals((await cli(dir, "approve", first)).code, 0);
    const workspace = gateway.config.agent.workspace;
    await Deno.mkdir(join(workspace, "dave"), { recursive: true });
    await Deno.writeTextFile(join(workspace, "dave", "diary.md"), "old dave's diary");
    assertEquals((await cli(dir, "remove", "dave")).code, 0);
    // A stranger also called Dave gets another name.
    const second = await pairingCode(gateway.handle(dm("777", "hi", { senderName: "Dave" })));
    const approved = await cli(dir, "approve", second);
    assertEquals(approved.code, 0, approved.err);
    assertMatch(approved.out, /approved telegram:777 as dave-2 /);
    // Memories alone hold a name too: "erin" wrote one, and left no directory.
    const db = openStateDb(gateway.config.agent.stateDir);
    try {
      new MemoryDatabase(db).write({
        store: "personal",
        person: "erin",
        text: "erin's notes",
        author: "erin",
        trust: "familiar",
        channel: "telegram",
      });
    } finally {
      db.close();
    }
    const erin = await pairingCode(gateway.handle(dm("999", "hi", { senderName: "Erin" })));
    assertMatch((await cli(dir, "approve", erin)).out, /approved telegram:999 as erin-2 /);
    // The owner may still name someone "dave" on purpose, and is told what they will see.
    const third = await pairingCode(gateway.handle(dm("888", "hi", { senderName: "Dee" })));
    const named = await cli(dir, "approve", third, "--name", "dave");
    assertEquals(named.code, 0, named.err);
    assertMatch(named.err, /"dave" still has data from before/);
  });
});
