import { deepStrictEqual, match, ok, strictEqual, throws } from "node:assert/strict";
import fc from "fast-check";
import { withCapturedLogs } from "../fixtures/captured_logs.ts";
import type { CronJobConfig } from "../../src/config/config.ts";
import { parseConfig } from "../../src/config/config.ts";
import {
  type CronReplyPayload,
  CronScheduler,
  CronSchedulerError,
  type CronTurnResult,
} from "../../src/cron/cron_scheduler.ts";
import { cronScheduleProblem, nextCronRun } from "../../src/config/cron_schedule.ts";
import { ConfigError } from "../../src/config/config_diagnostic.ts";
import { ManualClock, settle } from "../gateway/manual_clock.ts";

const MINUTE = 60_000;
const T0 = Date.UTC(2025, 0, 6, 8, 0, 0); // Monday 08:00 UTC

function job(overrides: Partial<CronJobConfig> = {}): CronJobConfig {
  return {
    name: "brief",
    schedule: "*/5 * * * *",
    user: "bob",
    message: "Summarise.",
    replyTo: { kind: "log" },
    sandbox: {},
    ...overrides,
  };
}

/** A turn the test finishes by hand. */
interface PendingTurn {
  job: CronJobConfig;
  signal: AbortSignal;
  resolve: (r: CronTurnResult) => void;
  reject: (e: Error) => void;
}

function manualTurns(): {
  turns: PendingTurn[];
  run: (j: CronJobConfig, s: AbortSignal) => Promise<CronTurnResult>;
} {
  const turns: PendingTurn[] = [];
  return {
    turns,
    run: (j, signal) =>
      new Promise((resolve, reject) => turns.push({ job: j, signal, resolve, reject })),
  };
}

Deno.test("nextCronRun: table of schedules and the tick after a given instant (UTC)", () => {
  const cases: Array<[string, number, number | null]> = [
    ["*/5 * * * *", T0, T0 + 5 * MINUTE],
    ["*/5 * * * *", T0 - 1, T0],
    ["0 9 * * *", T0, Date.UTC(2025, 0, 6, 9)],
    ["0 9 * * *", Date.UTC(2025, 0, 6, 9), Date.UTC(2025, 0, 7, 9)],
    ["0 8 * * 0", T0, Date.UTC(2025, 0, 12, 8)], // Sunday as 0
    ["0 8 * * 7", T0, Date.UTC(2025, 0, 12, 8)], // and as 7
    ["0 0 1 * 3", T0, Date.UTC(2025, 0, 8)], // day-of-month OR day-of-week: Wednesday first
    ["30 23 31 12 *", T0, Date.UTC(2025, 11, 31, 23, 30)],
    ["5/15 * * * *", T0, T0 + 5 * MINUTE], // N/step: from N to the field's end
    ["5/15 * * * *", T0 + 50 * MINUTE, T0 + 65 * MINUTE],
    ["0 0 31 2 *", T0, null],
    // cron(5) names (any case) and shortcuts
    ["0 9 * * sat,SUN", T0, Date.UTC(2025, 0, 11, 9)],
    ["0 9 * * Mon-Fri", Date.UTC(2025, 0, 10, 9), Date.UTC(2025, 0, 13, 9)], // Friday → Monday
    ["0 0 1 jun-aug/2 *", T0, Date.UTC(2025, 5, 1)],
    ["0 0 1 jun-aug/2 *", Date.UTC(2025, 5, 1), Date.UTC(2025, 7, 1)],
    ["@daily", T0, Date.UTC(2025, 0, 7)],
    ["@HOURLY", T0, T0 + 60 * MINUTE],
    ["@weekly", T0, Date.UTC(2025, 0, 12)],
    ["@yearly", T0, Date.UTC(2026, 0, 1)],
  ];
  for (const [schedule, after, expected] of cases) {
    strictEqual(nextCronRun(schedule, after, "UTC"), expected, schedule);
  }
});

Deno.test("property: every schedule the config accepts is understood by the scheduler", () => {
  const range = (min: number, max: number) =>
    fc.tuple(fc.integer({ min, max }), fc.integer({ min, max })).map(([a, b]) =>
      `${Math.min(a, b)}-${Math.max(a, b)}`
    );
  const field = (min: number, max: number) =>
    fc.oneof(
      fc.constant("*"),
      fc.integer({ min, max }).map(String),
      range(min, max),
      fc.tuple(
        fc.oneof(fc.constant("*"), fc.integer({ min, max }).map(String), range(min, max)),
        fc.integer({ min: 1, max }),
      ).map(([base, step]) => `${base}/${step}`),
    );
  const list = (min: number, max: number) =>
    fc.array(field(min, max), { minLength: 1, maxLength: 3 }).map((items) => items.join(","));
  const schedule = fc.tuple(list(0, 59), list(0, 23), list(1, 31), list(1, 12), list(0, 7))
    .map((fields) => fields.join(" "));
  fc.assert(
    fc.property(schedule, (s) => {
      strictEqual(cronScheduleProblem(s), null, s);
      const next = nextCronRun(s, T0, "UTC");
      ok(next === null || next > T0, s);
    }),
    { numRuns: 2000 },
  );
});

Deno.test("config: reply_to is log by default, or an http(s) callback URL", () => {
  const base = '[[users]]\nname = "bob"\ntrust = "full"\n[[cron]]\nname = "n"\n' +
    'schedule = "0 9 * * *"\nuser = "bob"\nmessage = "hi"\n';
  deepStrictEqual(parseConfig(base, "c.toml", "/").cron[0].replyTo, { kind: "log" });
  deepStrictEqual(
    parseConfig(base + 'reply_to = "https://example.org/hook?t=1"\n', "c.toml", "/").cron[0]
      .replyTo,
    { kind: "http", url: "https://example.org/hook?t=1" },
  );
  for (const bad of ["ftp://x/y", "stdout", "http://", "https://a b"]) {
    throws(
      () => parseConfig(base + `reply_to = "${bad}"\n`, "c.toml", "/"),
      (e: unknown) => e instanceof ConfigError && /cron\[0\]\.reply_to/.test(e.message),
      bad,
    );
  }
});

Deno.test("jobs run at each tick and not before", async () => {
  const clock = new ManualClock(T0 + 30_000);
  const runs: Array<{ job: string; at: number }> = [];
  const cron = new CronScheduler({
    jobs: [job(), job({ name: "hourly", schedule: "0 * * * *" })],
    clock,
    timezone: "UTC",
    runTurn: (j) => {
      runs.push({ job: j.name, at: clock.now() });
      return Promise.resolve({ reply: "ok" });
    },
  });
  cron.start();
  await clock.advance(5 * MINUTE - 30_001);
  strictEqual(runs.length, 0);
  await clock.advance(1);
  deepStrictEqual(runs, [{ job: "brief", at: T0 + 5 * MINUTE }]);
  await clock.advance(55 * MINUTE);
  strictEqual(runs.filter((r) => r.job === "brief").length, 12);
  deepStrictEqual(runs.filter((r) => r.job === "hourly"), [{
    job: "hourly",
    at: T0 + 60 * MINUTE,
  }]);
  strictEqual(cron.status()[0].nextRunAt, T0 + 65 * MINUTE);
  await cron.stop();
  strictEqual(clock.pending, 0, "stop cancels every timer");
});

Deno.test("a job still running skips the next tick (no overlap), then runs again", async () => {
  const clock = new ManualClock(T0);
  const { turns, run } = manualTurns();
  const cron = new CronScheduler({ jobs: [job()], clock, timezone: "UTC", runTurn: run });
  cron.start();
  await clock.advance(5 * MINUTE);
  strictEqual(turns.length, 1);
  await clock.advance(10 * MINUTE); // two more ticks while the first run is still going
  strictEqual(turns.length, 1, "no second run while the first is in progress");
  deepStrictEqual(
    (({ running, runs, skipped }) => ({ running, runs, skipped }))(cron.status()[0]),
    { running: true, runs: 1, skipped: 2 },
  );
  turns[0].resolve({ reply: "done" });
  await settle();
  strictEqual(cron.status()[0].running, false);
  await clock.advance(5 * MINUTE);
  strictEqual(turns.length, 2, "the next tick after it finished runs");
  turns[1].resolve({ reply: "done" });
  await cron.stop();
});

Deno.test("a failed run is logged, counted and retried at the next tick", async () => {
  const clock = new ManualClock(T0);
  let attempt = 0;
  const cron = new CronScheduler({
    jobs: [job()],
    clock,
    timezone: "UTC",
    runTurn: () => {
      attempt++;
      if (attempt === 1) return Promise.reject(new Error("provider unreachable"));
      if (attempt === 2) throw new Error("synchronous bug");
      return Promise.resolve({ reply: "fine" });
    },
  });
  cron.start();
  await clock.advance(5 * MINUTE);
  deepStrictEqual(
    (({ runs, failures, lastError }) => ({ runs, failures, lastError }))(cron.status()[0]),
    { runs: 1, failures: 1, lastError: "provider unreachable" },
  );
  await clock.advance(5 * MINUTE);
  strictEqual(cron.status()[0].failures, 2, "a synchronous throw is a failure, not a crash");
  await clock.advance(5 * MINUTE);
  deepStrictEqual(
    (({ runs, failures, lastError }) => ({ runs, failures, lastError }))(cron.status()[0]),
    { runs: 3, failures: 2, lastError: null },
  );
  await cron.stop();
});

Deno.test("stop aborts a run in progress and waits for it", async () => {
  const clock = new ManualClock(T0);
  const { turns, run } = manualTurns();
  const cron = new CronScheduler({ jobs: [job()], clock, timezone: "UTC", runTurn: run });
  cron.start();
  await clock.advance(5 * MINUTE);
  const turn = turns[0];
  turn.signal.addEventListener("abort", () => turn.reject(new Error("aborted")));
  let stopped = false;
  const stopping = cron.stop().then(() => stopped = true);
  await stopping;
  strictEqual(turn.signal.aborted, true);
  strictEqual(stopped, true);
  strictEqual(cron.status()[0].running, false);
  strictEqual(cron.status()[0].nextRunAt, null);
  await clock.advance(60 * MINUTE);
  strictEqual(turns.length, 1, "nothing runs after stop");
  throws(() => cron.start(), (e: unknown) => e instanceof CronSchedulerError);
});

Deno.test("long waits are re-armed below setTimeout's limit and still fire on time", async () => {
  const clock = new ManualClock(T0);
  const runs: number[] = [];
  const cron = new CronScheduler({
    jobs: [job({ schedule: "0 0 1 3 *" })], // 1 March: ~54 days away
    clock,
    timezone: "UTC",
    runTurn: () => {
      runs.push(clock.now());
      return Promise.resolve({ reply: "" });
    },
  });
  cron.start();
  await clock.advance(60 * 24 * 60 * MINUTE);
  deepStrictEqual(runs, [Date.UTC(2025, 2, 1)]);
  ok(clock.delays.every((d) => d <= 2 ** 31 - 1));
  ok(clock.delays.length >= 3, "the wait was split");
  await cron.stop();
});

Deno.test("a schedule that never fires is reported, not spun on", async () => {
  const clock = new ManualClock(T0);
  const cron = new CronScheduler({
    jobs: [job({ schedule: "0 0 31 2 *" })],
    clock,
    timezone: "UTC",
    runTurn: () => Promise.resolve({ reply: "" }),
  });
  cron.start();
  strictEqual(cron.status()[0].nextRunAt, null);
  strictEqual(clock.pending, 0);
  await cron.stop();
});

Deno.test("replies are POSTed to a loopback HTTP callback; failures too; a dead callback is counted", async () => {
  const received: CronReplyPayload[] = [];
  let status = 200;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
    strictEqual(req.method, "POST");
    strictEqual(req.headers.get("content-type"), "application/json");
    received.push(await req.json());
    return new Response("", { status });
  });
  const url = `http://127.0.0.1:${server.addr.port}/hook`;
  const clock = new ManualClock(T0);
  let attempt = 0;
  const cron = new CronScheduler({
    jobs: [job({ replyTo: { kind: "http", url } })],
    clock,
    timezone: "UTC",
    runTurn: (j) => {
      attempt++;
      return attempt === 2
        ? Promise.reject(new Error("model refused"))
        : Promise.resolve({ reply: `hello ${j.user} #${attempt}`, session: "s-1" });
    },
  });
  try {
    cron.start();
    await clock.advance(5 * MINUTE);
    await cron.whenIdle();
    await clock.advance(5 * MINUTE);
    await cron.whenIdle();
    deepStrictEqual(received, [
      {
        job: "brief",
        user: "bob",
        ok: true,
        reply: "hello bob #1",
        session: "s-1",
        scheduledAt: "2025-01-06T08:05:00.000Z",
        finishedAt: "2025-01-06T08:05:00.000Z",
      },
      {
        job: "brief",
        user: "bob",
        ok: false,
        error: "model refused",
        scheduledAt: "2025-01-06T08:10:00.000Z",
        finishedAt: "2025-01-06T08:10:00.000Z",
      },
    ]);
    strictEqual(cron.status()[0].deliveryFailures, 0);
    status = 500;
    await clock.advance(5 * MINUTE);
    await cron.whenIdle();
    strictEqual(received.length, 3);
    strictEqual(
      cron.status()[0].deliveryFailures,
      1,
      "a 500 from the callback is a delivery failure",
    );
    strictEqual(cron.status()[0].failures, 1, "delivery failures are not turn failures");
  } finally {
    await cron.stop();
    await server.shutdown();
  }
  // With the server gone, delivery fails (connection refused) without breaking the scheduler.
  const clock2 = new ManualClock(T0);
  const cron2 = new CronScheduler({
    jobs: [job({ replyTo: { kind: "http", url } })],
    clock: clock2,
    timezone: "UTC",
    runTurn: () => Promise.resolve({ reply: "x" }),
  });
  cron2.start();
  await clock2.advance(5 * MINUTE);
  await cron2.whenIdle();
  strictEqual(cron2.status()[0].deliveryFailures, 1);
  await clock2.advance(5 * MINUTE);
  await cron2.whenIdle();
  strictEqual(cron2.status()[0].runs, 2, "the scheduler keeps going");
  await cron2.stop();
});

Deno.test("duplicate job names and invalid schedules are refused with stable codes", () => {
  const cases: Array<[CronJobConfig[], string]> = [
    [[job(), job()], "cron.duplicate_job"],
    [[job({ schedule: "every day" })], "cron.invalid_schedule"],
  ];
  for (const [jobs, code] of cases) {
    throws(
      () => new CronScheduler({ jobs, runTurn: () => Promise.resolve({ reply: "" }) }),
      (e: unknown) => e instanceof CronSchedulerError && e.code === code,
      code,
    );
  }
  const problems: Array<[string, RegExp]> = [
    ["every day", /expected 5 fields/],
    ["0 0 0 * * *", /expected 5 fields .*got 6/], // croner's seconds field is not Coop's format
    ["*/61 * * * *", /^minute "\*\/61": steps cannot be greater than/],
    ["0 0 * */13 *", /^month "\*\/13": steps cannot be greater than/],
    ["*/0 * * * *", /^minute "\*\/0": illegal stepping: 0$/],
    ["5-1 * * * *", /^minute "5-1": From value is larger than to value/],
    ["60 * * * *", /^minute 60 is outside 0-59$/],
    ["0 24 * * *", /^hour 24 is outside 0-23$/],
    ["0 0 0 * *", /^day of month 0 is outside 1-31$/], // croner says "day: -1"
    ["0 0 32 * *", /^day of month 32 is outside 1-31$/],
    ["0 0 * 0 *", /^month 0 is outside 1-12$/],
    ["0 0 * 13 *", /^month 13 is outside 1-12$/],
    ["0 0 * * 8", /^day of week 8 is outside 0-7$/],
    ["0 9 * * mon-fry", /^day of week "mon-fry": "fry" is not one of SUN-SAT$/],
    ["0 9 * janu *", /^month "janu": "janu" is not one of JAN-DEC$/],
    ["0 mon * * *", /^hour "mon" may only use digits, \*, ",", "-" and "\/"$/],
    // croner's extensions are not cron(5): last day, nearest weekday, nth weekday, "?".
    ["0 0 L * *", /^day of month "L" may only use digits/],
    ["0 0 1W * *", /^day of month "1W" may only use digits/],
    ["0 0 * * 5#2", /^day of week "5#2" may only use digits.* and the names SUN-SAT$/],
    ["0 0 * * 5L", /^day of week "5L": "L" is not one of SUN-SAT$/],
    ["0 0 ? * *", /^day of month "\?" may only use digits/],
    ["@fortnightly", /unknown shortcut "@fortnightly" \(one of @yearly, .*@hourly\)/],
  ];
  const valid = [
    "@daily",
    "@DAILY",
    "0 9 * * MON-FRI",
    "5/15 * * * *",
    "0 0 * * 7",
    "*/60 * * * *",
  ];
  for (const schedule of valid) strictEqual(cronScheduleProblem(schedule), null, schedule);
  for (const [schedule, expected] of problems) {
    match(String(cronScheduleProblem(schedule)), expected, schedule);
  }
});

Deno.test("a dead callback's failure is logged without the token its URL carries", async () => {
  const token = "cb-secret-token-8c1f42";
  const url = `http://127.0.0.1:9/hook?token=${token}`;
  // Deno's fetch before 2.3 (and reqwest under it) quoted the whole URL in its error message;
  // 2.9 says "fetch failed". Both spellings are played here; neither may reach the log.
  const realFetch = globalThis.fetch;
  let calls = 0;
  globalThis.fetch = () => {
    calls++;
    return Promise.reject(
      calls === 1
        ? new TypeError(`error sending request for url (${url}): client error (Connect)`)
        : new TypeError("fetch failed"),
    );
  };
  const records = await withCapturedLogs(async (records) => {
    const clock = new ManualClock(T0);
    const cron = new CronScheduler({
      jobs: [job({ replyTo: { kind: "http", url } })],
      clock,
      timezone: "UTC",
      runTurn: () => Promise.resolve({ reply: "x" }),
    });
    try {
      cron.start();
      for (let i = 0; i < 2; i++) {
        await clock.advance(5 * MINUTE);
        await cron.whenIdle();
      }
      strictEqual(cron.status()[0].deliveryFailures, 2);
    } finally {
      await cron.stop();
      globalThis.fetch = realFetch;
    }
    return records;
  });
  const failed = records.filter((r) => r.properties.event === "cron.delivery_failed");
  deepStrictEqual(failed.map((r) => r.properties.error), [
    "error sending request for url (http://127.0.0.1:9/…): client error (Connect)",
    "fetch failed",
  ]);
  ok(!JSON.stringify(records.map((r) => r.properties)).includes(token), "no token in any log");
});
