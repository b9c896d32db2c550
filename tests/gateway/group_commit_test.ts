/**
 * Group commit (issue 17): a turn's messages are committed as they go without an fsync; the turn
 * returns only after an fsync of the WAL that began after its last commit; concurrent turns share
 * one. The fsync is the gateway's injectable `walSync`, recorded here in order with the commits
 * and the replies. (The kill -9 and disk-full tests in tests/e2e/ cover the real fsync.)
 */
import { fdatasync } from "node:fs";
import { join } from "node:path";
import { commandResult } from "../fixtures/command_result.ts";
import { parseConfig } from "../../src/config/config.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { TurnError } from "../../src/agent/mod.ts";
import type { SyncData } from "../../src/state/wal_flush.ts";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { type ScriptedReply, withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { coopToml } from "../e2e/coop_toml.ts";

const format = ANTHROPIC;
const bash = (id: string) => format.toolCall(id, "bash", [JSON.stringify({ command: "true" })]);

/** A gateway whose WAL fsyncs go through `walSync` and whose commits are logged in `events`. */
async function withRecordedGateway(
  script: readonly ScriptedReply[],
  walSync: SyncData,
  fn: (gateway: Gateway, events: string[]) => Promise<void>,
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-gc-" }));
  try {
    await withScriptedServer(script, async (server) => {
      const text = coopToml({ kind: "anthropic", baseUrl: server.url }).replaceAll("{{dir}}", dir);
      const gateway = Gateway.open(parseConfig(text, join(dir, "coop.toml"), dir), {
        executor: {
          env: { PATH: "/usr/bin:/bin" },
          sandbox: () => Promise.resolve(commandResult({ stdout: "sandboxed\n" })),
        },
        walSync,
      });
      const events = recorded;
      events.length = 0;
      const { sessions } = gateway;
      const append = sessions.append.bind(sessions);
      sessions.append = (key, message, options) => {
        const stored = append(key, message, options);
        const how = options?.durable ?? true ? "durable" : "committed";
        events.push(`${key.session}:${message.role}:${how}`);
        return stored;
      };
      try {
        await fn(gateway, events);
      } finally {
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Shared by the gateway's wrappers and the fake fsyncs of one test (tests run one at a time). */
const recorded: string[] = [];

/** An fsync that only records itself (and really syncs, so the file is what it claims). */
const countingSync: SyncData = (fd) => {
  recorded.push("fsync");
  return new Promise((resolve, reject) => fdatasync(fd, (e) => e ? reject(e) : resolve()));
};

Deno.test("group commit: a turn's steps are committed as they go, one fsync before the reply", async () => {
  await withRecordedGateway(
    [bash("t1"), bash("t2"), format.text(["done"])],
    countingSync,
    async (gateway, events) => {
      const outcome = await gateway.handle({
        channel: "http",
        sender: "bob",
        text: "go",
        session: "s",
      });
      events.push("replied");
      assertEquals(outcome.reply, "done");
      assertEquals(events, [
        "s:user:committed",
        "s:assistant:committed",
        "s:tool:committed",
        "s:assistant:committed",
        "s:tool:committed",
        "s:assistant:committed",
        "fsync",
        "replied",
      ]);
    },
  );
});

Deno.test("group commit: a turn that fails after a tool step still fsyncs its steps", async () => {
  const refused = { status: 400, chunks: ['{"error":{"message":"refused"}}'] };
  await withRecordedGateway([bash("t1"), refused], countingSync, async (gateway, events) => {
    await assertRejects(
      () => gateway.handle({ channel: "http", sender: "bob", text: "go", session: "s" }),
      TurnError,
    );
    assertEquals(events, [
      "s:user:committed",
      "s:assistant:committed",
      "s:tool:committed",
      "fsync",
    ]);
  });
});

Deno.test("group commit: two concurrent turns share one fsync, and neither replies before it", async () => {
  // The first fsync (turn c's) is held open; turns a and b commit their replies meanwhile.
  let release = () => {};
  const held = new Promise<void>((resolve) => release = resolve);
  let fsyncs = 0;
  const heldSync: SyncData = async () => {
    const n = ++fsyncs;
    recorded.push(`fsync ${n} start`);
    if (n === 1) await held;
    recorded.push(`fsync ${n} end`);
  };
  const script = [format.text(["c"]), format.text(["x"]), format.text(["y"])];
  await withRecordedGateway(script, heldSync, async (gateway, events) => {
    const turn = (session: string) =>
      gateway.handle({ channel: "http", sender: "bob", text: session, session }).then(
        () => events.push(`${session}:replied`),
      );
    const c = turn("c");
    await until(() => events.includes("fsync 1 start"));
    const ab = [turn("a"), turn("b")];
    await until(() =>
      events.filter((e) => e === "a:assistant:committed" || e === "b:assistant:committed")
        .length === 2
    );
    // Both replies are committed, the fsync that began before them has not ended: no reply.
    assert(!events.some((e) => e.endsWith(":replied")), events.join(", "));
    release();
    await Promise.all([c, ...ab]);
    assertEquals(fsyncs, 2, `one fsync for c, one shared by a and b: ${events.join(", ")}`);
    const at = (e: string) => events.indexOf(e);
    assert(at("c:replied") > at("fsync 1 end"), "c waited for its own fsync");
    for (const s of ["a", "b"]) {
      assert(at(`${s}:assistant:committed`) < at("fsync 2 start"), `${s} committed first`);
      assert(at(`${s}:replied`) > at("fsync 2 end"), `${s} replied after the fsync covering it`);
    }
  });
});

async function until(done: () => boolean): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out: ${recorded.join(", ")}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
