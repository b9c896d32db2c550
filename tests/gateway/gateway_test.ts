/**
 * The gateway in-process: a scripted provider on loopback, a fake sandbox runner, a real state
 * database. Routing, taint from history, the system prompt's turn context, drain, cron errors.
 */
import { join } from "node:path";
import { commandResult } from "../fixtures/command_result.ts";
import { parseConfig } from "../../src/config/config.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { until } from "../sandbox/harness.ts";
import { type ScriptedReply, withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { coopToml } from "../e2e/coop_toml.ts";

const format = ANTHROPIC;

const SANDBOX_RESULT = commandResult({ stdout: "sandboxed\n" });

function configText(dir: string, baseUrl: string, extra = ""): string {
  return coopToml({ kind: "anthropic", baseUrl, extra }).replaceAll("{{dir}}", dir);
}

async function withGateway(
  script: readonly ScriptedReply[],
  fn: (
    gateway: Gateway,
    server: { requests: Array<{ body: Record<string, unknown> }> },
  ) => Promise<void>,
  extra = "",
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-gw-" }));
  try {
    await withScriptedServer(script, async (server) => {
      const config = parseConfig(configText(dir, server.url, extra), join(dir, "coop.toml"), dir);
      const gateway = Gateway.open(config, {
        executor: {
          env: { PATH: "/usr/bin:/bin" },
          sandbox: () => Promise.resolve(SANDBOX_RESULT),
        },
      });
      try {
        await fn(gateway, server);
      } finally {
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const system = (body: Record<string, unknown>) => String(body.system);

Deno.test("gateway: the system prompt names the speaker, their trust and where tools work", async () => {
  await withGateway([format.text(["hi bob"]), format.text(["hi you"])], async (gateway, server) => {
    const bob = await gateway.handle({ channel: "http", sender: "bob", text: "hello" });
    assertEquals(bob.reply, "hi bob");
    assertMatch(system(server.requests[0].body), /talking with bob \(trust: full\) via http/);
    assertMatch(system(server.requests[0].body), /tools work in \/work\./);
    await gateway.handle({ channel: "http", sender: "zed", text: "hello" });
    assertMatch(system(server.requests[1].body), /talking with public \(trust: public\)/);
    assertMatch(system(server.requests[1].body), /You have no tools/);
  });
});

Deno.test("gateway: a session continues with its history; /clear forgets it", async () => {
  const script = [format.text(["one"]), format.text(["two"]), format.text(["three"])];
  await withGateway(script, async (gateway, server) => {
    const first = await gateway.handle({ channel: "terminal", sender: "default", text: "a" });
    await gateway.handle({
      channel: "terminal",
      sender: "default",
      text: "b",
      session: first.session,
    });
    assertEquals(format.messages(server.requests[1].body).length, 3);
    const key = { channel: "terminal", user: "alice", session: first.session };
    assertEquals(gateway.sessions.history(key).map((m) => m.role), [
      "user",
      "assistant",
      "user",
      "assistant",
    ]);
    assert(gateway.clearSession("terminal", "default", first.session));
    assertEquals(gateway.sessions.history(key), []);
    await gateway.handle({
      channel: "terminal",
      sender: "default",
      text: "c",
      session: first.session,
    });
    assertEquals(format.messages(server.requests[2].body).length, 1);
  });
});

Deno.test("gateway: two requests for one session at once run one after the other", async () => {
  const script = [format.text(["first ", "answer ", "in ", "parts"]), format.text(["second"])];
  await withGateway(script, async (gateway, server) => {
    const ask = (text: string) =>
      gateway.handle({ channel: "http", sender: "bob", text, session: "same" });
    const [a, b] = await Promise.all([ask("one"), ask("two")]);
    assertEquals([a.reply, b.reply], ["first answer in parts", "second"]);
    const history = gateway.sessions.history({ channel: "http", user: "bob", session: "same" });
    assertEquals(history.map((m) => [m.role, m.content]), [
      ["user", "one"],
      ["assistant", { text: "first answer in parts", toolCalls: [] }],
      ["user", "two"],
      ["assistant", { text: "second", toolCalls: [] }],
    ]);
    // The second request saw the whole first exchange.
    assertEquals(format.messages(server.requests[1].body).length, 3);
  });
});

Deno.test("gateway: two unknown senders naming the same session id never share it", async () => {
  await withGateway(
    [format.text(["to dave"]), format.text(["to erin"])],
    async (gateway, server) => {
      await gateway.handle({
        channel: "http",
        sender: "dave",
        text: "dave's secret",
        session: "main",
      });
      await gateway.handle({
        channel: "http",
        sender: "erin",
        text: "what did dave say?",
        session: "main",
      });
      assertEquals(
        format.messages(server.requests[1].body).length,
        1,
        "erin sees only her message",
      );
      const dave = gateway.sessions.history({
        channel: "http",
        user: "public:dave",
        session: "main",
      });
      assertEquals(dave.map((m) => m.content), ["dave's secret", {
        text: "to dave",
        toolCalls: [],
      }]);
    },
  );
});

/** Puts an earlier message written at trust "familiar" by `principal` into bob's HTTP session. */
function seedFamiliarMessage(gateway: Gateway, session: string, principal: string): void {
  const key = { channel: "http", user: "bob", session };
  gateway.sessions.append(key, { role: "user", content: "earlier", principal, trust: "familiar" });
}

Deno.test("gateway: a session once at lower trust stays tainted for its own user", async () => {
  await withGateway([format.text(["ok"])], async (gateway, server) => {
    seedFamiliarMessage(gateway, "was-low", "bob");
    await gateway.handle({ channel: "http", sender: "bob", text: "run it", session: "was-low" });
    assert(!format.toolNames(server.requests[0].body).includes("bash"), "no bash at familiar");
  });
});

Deno.test("gateway: text from a less trusted principal in the session taints the turn", async () => {
  await withGateway([format.text(["ok"])], async (gateway, server) => {
    seedFamiliarMessage(gateway, "shared1", "carol");
    await gateway.handle({ channel: "http", sender: "bob", text: "run it", session: "shared1" });
    const offered = format.toolNames(server.requests[0].body);
    assert(!offered.includes("bash"), `tainted to familiar: no bash (${offered})`);
    assertMatch(system(server.requests[0].body), /\(trust: familiar\)/);
  });
});

Deno.test("gateway: [channels.terminal] user names the terminal's user outright", async () => {
  await withGateway([], (gateway) => {
    assertEquals(gateway.route("terminal", "default").principal, { name: "bob", trust: "full" });
    assertEquals(gateway.route("http", "bob").principal, { name: "bob", trust: "full" });
    return Promise.resolve();
  }, `[channels.terminal]\nuser = "bob"\n`);
});

Deno.test("gateway: drain cancels the turn in flight and refuses new ones", async () => {
  await withGateway([format.hanging("thinking")], async (gateway) => {
    let streamed = "";
    // The owner on the terminal: their text streams as it comes (a non-owner's is held until
    // the model's response is complete, for the leak scan — tests/gateway/leak_guard_test.ts).
    const turn = gateway.handle({
      channel: "terminal",
      sender: "default",
      text: "long",
      session: "d1",
      onEvent: (event) => event.type === "text" && (streamed += event.text),
    });
    assert(await until(() => streamed !== "", 20_000), "the turn never streamed");
    await gateway.drain();
    const error = await turn.catch((e) => e);
    assertEquals(error.code, "gateway.shutdown");
    const refused = await assertRejects(
      () => gateway.handle({ channel: "http", sender: "bob", text: "more" }),
      Error,
    );
    assertMatch(refused.message, /shutting down/);
    // What was said is kept: the message and the text streamed before the cancel.
    const history = gateway.sessions.history({ channel: "terminal", user: "alice", session: "d1" });
    assertEquals(history.map((m) => m.role), ["user", "assistant"]);
  });
});

Deno.test("gateway: a cron job for an unknown user fails with a clear error", async () => {
  await withGateway([], async (gateway) => {
    const job = {
      name: "j",
      schedule: "* * * * *",
      user: "ghost",
      message: "hi",
      replyTo: { kind: "log" as const },
      sandbox: {},
    };
    const error = await gateway.runCronJob(job, new AbortController().signal).catch((e) => e);
    assertEquals(error.code, "gateway.cron_unknown_user");
    assertMatch(error.message, /"ghost", who is not a configured user/);
  });
});

Deno.test("gateway: no model configured is a provider error and nothing is recorded", async () => {
  await withGateway([], async (gateway) => {
    (gateway.config.agent as { model?: string }).model = undefined;
    const error = await gateway.handle({
      channel: "http",
      sender: "bob",
      text: "hi",
      session: "m1",
    })
      .catch((e) => e);
    assertEquals(error.code, "provider.not_configured");
    assertEquals(gateway.sessions.history({ channel: "http", user: "bob", session: "m1" }), []);
  });
});
