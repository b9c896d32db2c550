/**
 * ATTACKS R14, concurrent turns from one person, through the gateway: dave (`inner`) fires 31
 * turns at once, each of which runs `bash` in a sandbox that blocks until the test releases it.
 * The sandbox fake counts how many of dave's run at once: never more than the cap. The excess
 * waits in the bounded queue or is refused (HTTP 429 naming the limit); bob's turn goes through
 * meanwhile; cancelling and draining queued turns frees everything.
 */
import { join } from "node:path";
import { createHttpHandler } from "../../src/channels/http_channel.ts";
import { parseConfig } from "../../src/config/config.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import type { CommandResult } from "../../src/tools/tool_contract.ts";
import type { HostRunner } from "../../src/tools/host_runner.ts";
import type { SandboxRunner } from "../../src/tools/sandbox_placement.ts";
import { TurnLimitError } from "../../src/gateway/turn_limiter.ts";
import type { TurnOutcome } from "../../src/gateway/turn_handler.ts";
import { commandResult } from "../fixtures/command_result.ts";
import { ANTHROPIC } from "../agent/wire_formats.ts";
import { coopToml } from "../e2e/coop_toml.ts";
import { assert, assertEquals, assertMatch } from "../assert.ts";

const format = ANTHROPIC;

const DAVE = `
[[users]]
name = "dave"
trust = "inner"
match = ["http:dave"]
`;

/**
 * Where commands run, held until `release()`: dave's sandboxes and the owner's host commands are
 * counted (how many at once, the most ever); everyone else's return at once.
 */
class BlockingCommands {
  running = 0;
  most = 0;
  started = 0;
  #release!: () => void;
  readonly #released = new Promise<void>((resolve) => this.#release = resolve);

  readonly sandbox: SandboxRunner = (policy, _argv, options) =>
    policy.workspace.endsWith("/dave")
      ? this.#hold(options.signal)
      : Promise.resolve(commandResult({ stdout: "quick\n" }));

  readonly host: HostRunner = (_command, options) => this.#hold(options.signal);

  async #hold(signal?: AbortSignal): Promise<CommandResult> {
    this.started++;
    this.most = Math.max(this.most, ++this.running);
    try {
      const killed = new Promise<"killed">((resolve) => {
        if (signal?.aborted) resolve("killed");
        signal?.addEventListener("abort", () => resolve("killed"), { once: true });
      });
      const how = await Promise.race([this.#released.then(() => "released" as const), killed]);
      return how === "killed"
        ? commandResult({ exitCode: 137, signal: "SIGKILL" })
        : commandResult({ stdout: "done\n" });
    } finally {
      this.running--;
    }
  }

  release(): void {
    this.#release();
  }
}

/**
 * A model on loopback: every turn calls `bash` once, then answers "finished". Concurrency is
 * measured where the command runs, where each turn holds its resources.
 */
async function withModel(fn: (url: string) => Promise<void>): Promise<void> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (req) => {
    const body = await req.json();
    const last = JSON.stringify(body.messages.at(-1));
    const reply = last.includes("tool_result")
      ? format.text(["finished"])
      : format.toolCall(`c${crypto.randomUUID().slice(0, 8)}`, "bash", ['{"command":"work"}']);
    return new Response(reply.chunks!.join(""), { headers: reply.headers });
  });
  try {
    await fn(`http://127.0.0.1:${server.addr.port}`);
  } finally {
    await server.shutdown();
  }
}

async function withGateway(
  agent: string,
  fn: (gateway: Gateway, commands: BlockingCommands) => Promise<void>,
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-r14-" }));
  const commands = new BlockingCommands();
  try {
    await withModel(async (url) => {
      const text = coopToml({ kind: format.kind, baseUrl: url, extra: DAVE })
        .replace("[agent]\n", `[agent]\n${agent}`)
        .replaceAll("{{dir}}", dir);
      const config = parseConfig(text, join(dir, "coop.toml"), dir);
      const gateway = Gateway.open(config, {
        executor: { env: {}, sandbox: commands.sandbox, host: commands.host },
      });
      try {
        await fn(gateway, commands);
      } finally {
        await gateway.drain();
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Waits until `ready()` holds (the turns have reached the sandbox or the queue). */
async function until(ready: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!ready()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** How a turn ended. */
type Settled = { ok: true; outcome: TurnOutcome } | { ok: false; error: unknown };

/** Turns started at once, each recorded in `ended` as soon as it settles. */
function startTurns(count: number, start: (i: number) => Promise<TurnOutcome>) {
  const ended: Array<Settled | undefined> = new Array(count).fill(undefined);
  const all = Array.from({ length: count }, (_, i) =>
    start(i).then(
      (outcome): Settled => ended[i] = { ok: true, outcome },
      (error): Settled => ended[i] = { ok: false, error },
    ));
  return { ended, all: Promise.all(all) };
}

Deno.test("R14: 31 turns at once from one inner user — 4 run, 8 wait, 19 are refused; bob is unaffected", async () => {
  await withGateway("", async (gateway, commands) => {
    const controllers = Array.from({ length: 31 }, () => new AbortController());
    const { ended, all } = startTurns(31, (i) =>
      gateway.handle({
        channel: "http",
        sender: "dave",
        text: `job ${i}`,
        signal: controllers[i].signal,
      }));
    const queued = () => gateway.turnCounts().dave?.waiting ?? 0;
    const refused = () => ended.filter(Boolean).length;
    // Settled: each turn refused, holding a sandbox, or admitted but not running (queued).
    await until(
      () => commands.running >= 4 && refused() + commands.running + queued() === 31,
      "every turn to be refused, queued or holding a sandbox",
    );
    assertEquals([commands.running, queued(), refused()], [4, 8, 19]);

    // Beyond the queue: refused at once with the typed error, before anything ran or was stored.
    assertEquals(ended.slice(0, 12), new Array(12).fill(undefined), "the first 12 are admitted");
    for (const r of ended.slice(12)) {
      assert(r && !r.ok && r.error instanceof TurnLimitError, String(r && !r.ok && r.error));
      assertEquals(r.error.user, "dave");
      assertEquals(r.error.limit, {
        concurrent: 4,
        queued: 8,
        setting: "[agent] max_concurrent_turns_per_user",
      });
    }

    // Over HTTP the same refusal is a 429 naming the limit.
    const handler = createHttpHandler({
      tokens: [{ id: "dave", token: "dave-token" }],
      maxBodyBytes: 4096,
      handle: gateway.handle,
    });
    const response = await handler(
      new Request("http://coop/v1/messages", {
        method: "POST",
        headers: { authorization: "Bearer dave-token", "content-type": "application/json" },
        body: JSON.stringify({ text: "one more" }),
      }),
    );
    assertEquals(response.status, 429);
    const { error } = await response.json();
    assertEquals(error.code, "too_many_turns");
    assertEquals(error.limit, {
      setting: "[agent] max_concurrent_turns_per_user",
      concurrent: 4,
      queued: 8,
    });
    assertMatch(error.message, /4 may run .* and 8 may wait .*try again/);

    // A cron job of dave's counts against the same cap.
    const job = {
      name: "nightly",
      schedule: "0 3 * * *",
      user: "dave",
      message: "report",
      replyTo: { kind: "log" as const },
      sandbox: {},
    };
    const cron = await gateway.runCronJob(job, new AbortController().signal).catch((e) => e);
    assert(cron instanceof TurnLimitError, String(cron));

    // Bob's turn (bash in his own sandbox) runs while dave's are held.
    const bob = await gateway.handle({ channel: "http", sender: "bob", text: "quick one" });
    assertEquals(bob.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
    assertEquals(bob.reply, "finished");

    // Two queued turns are cancelled by their callers: they leave the queue at once.
    controllers[11].abort(new Error("caller went away"));
    controllers[10].abort(new Error("caller went away"));
    await until(() => gateway.turnCounts().dave?.waiting === 6, "6 queued after cancels");
    await until(() => ended[10] !== undefined && ended[11] !== undefined, "the cancels to end");
    for (const r of [ended[10], ended[11]]) {
      assertMatch(String(r && !r.ok && r.error), /caller went away/);
    }
    assertEquals(commands.started, 4, "nothing queued ran early");

    commands.release();
    const results = await all;
    const done = results.filter((r) => r.ok);
    assertEquals(done.length, 10, "4 running + 8 queued − 2 cancelled");
    for (const r of done) assertEquals(r.ok && r.outcome.reply, "finished");
    assertEquals(commands.started, 10, "every admitted, uncancelled turn reached its sandbox");
    assertEquals(commands.most, 4, "never more than 4 of dave's sandboxes at once");
    assertEquals(gateway.turnCounts(), {}, "nothing left running or queued");
  });
});

Deno.test("R14: draining while turns are queued cancels them all and frees every slot", async () => {
  const agent = "max_concurrent_turns_per_user = 2\nmax_queued_turns_per_user = 3\n";
  await withGateway(agent, async (gateway, commands) => {
    const { ended, all } = startTurns(
      6,
      (i) => gateway.handle({ channel: "http", sender: "dave", text: `job ${i}` }),
    );
    const queued = () => gateway.turnCounts().dave?.waiting ?? 0;
    const refused = () => ended.filter(Boolean).length;
    await until(
      () => commands.running >= 2 && refused() + commands.running + queued() === 6,
      "2 sandboxes, 3 queued turns and 1 refusal",
    );
    assertEquals([commands.running, queued(), refused()], [2, 3, 1]);
    await gateway.drain();
    const codes = (await all).map((r) => r.ok ? "ok" : (r.error as { code?: string }).code);
    assertEquals(codes.filter((c) => c === "gateway.too_many_turns").length, 1);
    assertEquals(codes.filter((c) => c === "gateway.shutdown").length, 5, codes.join());
    assertEquals(commands.running, 0, "the running sandboxes were killed");
    assertEquals([commands.started, commands.most], [2, 2], "no queued turn started");
    assertEquals(gateway.turnCounts(), {});
  });
});

Deno.test("R14: the owner is exempt — their turns are not capped", async () => {
  const agent = "max_concurrent_turns_per_user = 1\nmax_queued_turns_per_user = 0\n";
  await withGateway(agent, async (gateway, commands) => {
    const { ended, all } = startTurns(
      3,
      (i) => gateway.handle({ channel: "terminal", sender: "default", text: `${i}` }),
    );
    const refused = () => ended.filter(Boolean).length;
    await until(() => commands.running + refused() === 3, "every turn to run or be refused");
    assertEquals([commands.running, refused()], [3, 0], "3 host commands at once");
    assertEquals(gateway.turnCounts(), {}, "the owner's turns are not counted");
    commands.release();
    assertEquals((await all).map((r) => r.ok), [true, true, true]);
  });
});
