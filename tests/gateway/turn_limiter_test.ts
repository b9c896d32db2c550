/**
 * `TurnLimiter` and `turnLimitFor` (ATTACKS R14) as units, and the config keys that set them:
 * slots first come first served, a bounded queue, refusal beyond it, nothing left after.
 */
import { join } from "node:path";
import { ConfigError } from "../../src/config/config_diagnostic.ts";
import { type CoopConfig, parseConfig } from "../../src/config/config.ts";
import { routeUser } from "../../src/gateway/router.ts";
import {
  type TurnLimit,
  TurnLimiter,
  TurnLimitError,
  turnLimitFor,
} from "../../src/gateway/turn_limiter.ts";
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { usersToml } from "../fixtures/users_toml.ts";

const LIMIT: TurnLimit = {
  concurrent: 2,
  queued: 1,
  setting: "[agent] max_concurrent_turns_per_user",
};

/** Lets queued promise callbacks run. */
const settle = () => new Promise((r) => setTimeout(r, 0));

Deno.test("limiter: two run, one waits, the fourth is refused; a finished turn lets the next in", async () => {
  const limiter = new TurnLimiter();
  const signal = new AbortController().signal;
  const [a, b, c] = [1, 2, 3].map(() => limiter.admit("dave", LIMIT));
  await a.start(signal);
  await b.start(signal);
  let cStarted = false;
  const cStart = c.start(signal).then(() => cStarted = true);
  await settle();
  assertEquals(cStarted, false, "the third waits");
  assertEquals(limiter.counts(), { dave: { running: 2, waiting: 1 } });
  const refused = (() => {
    try {
      limiter.admit("dave", LIMIT);
    } catch (error) {
      return error;
    }
  })();
  assert(refused instanceof TurnLimitError);
  assertEquals(refused.code, "gateway.too_many_turns");
  assertMatch(
    refused.message,
    /2 may run \(\[agent\] max_concurrent_turns_per_user\) and 1 may wait/,
  );
  // Someone else is not affected.
  const erin = limiter.admit("erin", LIMIT);
  await erin.start(signal);
  erin.done();
  a.done();
  await cStart;
  assertEquals(limiter.counts(), { dave: { running: 2, waiting: 0 } });
  b.done();
  c.done();
  assertEquals(limiter.counts(), {}, "nothing left");
});

Deno.test("limiter: slots go to waiting turns first come, first served", async () => {
  const limiter = new TurnLimiter();
  const limit = { ...LIMIT, concurrent: 1, queued: 5 };
  const signal = new AbortController().signal;
  const first = limiter.admit("dave", limit);
  await first.start(signal);
  const order: number[] = [];
  const waiting = [1, 2, 3].map((n) => {
    const admission = limiter.admit("dave", limit);
    return admission.start(signal).then(() => {
      order.push(n);
      admission.done();
    });
  });
  first.done();
  await Promise.all(waiting);
  assertEquals(order, [1, 2, 3]);
  assertEquals(limiter.counts(), {});
});

Deno.test("limiter: a turn cancelled while waiting leaves the queue and frees its place", async () => {
  const limiter = new TurnLimiter();
  const limit = { ...LIMIT, concurrent: 1, queued: 1 };
  const running = limiter.admit("dave", limit);
  await running.start(new AbortController().signal);
  const controller = new AbortController();
  const queued = limiter.admit("dave", limit);
  const waiting = queued.start(controller.signal);
  assertEquals(limiter.counts(), { dave: { running: 1, waiting: 1 } });
  controller.abort(new Error("client went away"));
  assertMatch((await assertRejects(() => waiting, Error)).message, /client went away/);
  queued.done();
  queued.done(); // twice is harmless
  assertEquals(limiter.counts(), { dave: { running: 1, waiting: 0 } });
  const next = limiter.admit("dave", limit); // its place is free again
  running.done();
  await next.start(new AbortController().signal);
  next.done();
  assertEquals(limiter.counts(), {});
});

Deno.test("limiter: an already cancelled turn never takes a slot", async () => {
  const limiter = new TurnLimiter();
  const admission = limiter.admit("dave", LIMIT);
  const gone = await assertRejects(
    () => admission.start(AbortSignal.abort(new Error("gone"))),
    Error,
  );
  assertEquals(gone.message, "gone");
  admission.done();
  assertEquals(limiter.counts(), {});
});

const CONFIG = usersToml([
  ["alice", "owner"],
  ["olga", "owner", "max_concurrent_turns = 2\n"],
  ["dave", "inner"],
  ["erin", "inner", "max_concurrent_turns = 1\n"],
]);

function config(agent = ""): CoopConfig {
  return parseConfig(CONFIG.replace("[agent]\n", `[agent]\n${agent}`), "/x/coop.toml", "/x");
}

function limitOf(cfg: CoopConfig, name: string): TurnLimit | null {
  return turnLimitFor(cfg, routeUser(cfg.users.find((u) => u.name === name)!));
}

Deno.test("turnLimitFor: defaults 4 + 8, per-user override, the owner exempt unless they set one", () => {
  const cfg = config();
  assertEquals(limitOf(cfg, "dave"), {
    concurrent: 4,
    queued: 8,
    setting: "[agent] max_concurrent_turns_per_user",
  });
  assertEquals(limitOf(cfg, "erin"), {
    concurrent: 1,
    queued: 8,
    setting: '[[users]] "erin" max_concurrent_turns',
  });
  assertEquals(limitOf(cfg, "alice"), null, "the owner is exempt");
  assertEquals(limitOf(cfg, "olga")?.concurrent, 2, "an owner who sets a cap gets it");
  const tuned = config("max_concurrent_turns_per_user = 2\nmax_queued_turns_per_user = 0\n");
  assertEquals([limitOf(tuned, "dave")?.concurrent, limitOf(tuned, "dave")?.queued], [2, 0]);
});

Deno.test("config: the turn caps are validated with the key and what was expected", () => {
  const cases: Array<[string, RegExp]> = [
    [
      "[agent]\nmax_concurrent_turns_per_user = 0\n",
      /agent\.max_concurrent_turns_per_user.*at least 1/,
    ],
    [
      "[agent]\nmax_concurrent_turns_per_user = 1.5\n",
      /agent\.max_concurrent_turns_per_user: expected int, got 1\.5/,
    ],
    ["[agent]\nmax_queued_turns_per_user = -1\n", /agent\.max_queued_turns_per_user.*at least 0/],
    ["[agent]\nmax_queued_turns_per_user = 10001\n", /max_queued_turns_per_user.*at most 10000/],
    [
      '[agent]\nmax_concurrent_turns_per_user = "4"\n',
      /max_concurrent_turns_per_user: expected number, got "4"/,
    ],
    [
      '[[users]]\nname = "dave"\ntrust = "inner"\nmax_concurrent_turns = 0\n',
      /users\[0\]\.max_concurrent_turns.*at least 1/,
    ],
  ];
  for (const [text, expected] of cases) {
    let message = "";
    try {
      parseConfig(text, join("/x", "coop.toml"), "/x");
    } catch (error) {
      assert(error instanceof ConfigError, String(error));
      message = error.message;
    }
    assertMatch(message, expected, text);
  }
});
