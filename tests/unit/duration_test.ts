import { assertEquals, assertMatch, assertThrows } from "../assert.ts";
import {
  formatDuration,
  MAX_TIMER_MS,
  parseDuration,
  timeoutProblem,
} from "../../src/sandbox/duration.ts";
import { exec, SandboxPolicyError } from "../../src/sandbox/mod.ts";
import { parseTimeoutFlag } from "../../src/cli/sandbox_exec_command.ts";
import { UsageError } from "../../src/cli/usage_error.ts";

Deno.test("parseDuration: the one syntax, including where the two old parsers disagreed", () => {
  // [input, milliseconds or null, what the CLI's copy said, what the config's copy said]
  const table: Array<[string | number, number | null, string]> = [
    ["500ms", 500, "both"],
    ["30s", 30_000, "both"],
    ["2m", 120_000, "both"],
    ["1h", 3_600_000, "both"],
    [" 5m ", 300_000, "both trimmed"],
    ["1.5s", 1500, "both"],
    ["5", 5000, "CLI: seconds; config: refused — docs/config.md says a number is seconds"],
    [30, 30_000, "config only (a TOML number); the CLI never sees numbers"],
    [0.25, 250, "config only"],
    ["30 s", 30_000, "CLI: refused; config: accepted — spaces before the unit are allowed"],
    ["1.5ms", 2, "CLI: 1.5 (a fraction); config: 2 — whole milliseconds, rounded"],
    ["0s", 0, "CLI: refused; config: 0 — parses; the range check refuses it as a timeout"],
    ["0", 0, "parses; refused as a timeout by timeoutProblem"],
    ["ten", null, "both"],
    ["", null, "both"],
    ["-5s", null, "both: no sign"],
    ["5 minutes", null, "both: units are ms, s, m, h"],
    ["5S", null, "both: units are lower case"],
    ["1h30m", null, "both: one unit"],
    [-1, null, "config"],
    [Number.NaN, null, "config"],
    [Infinity, null, "config"],
    ["9".repeat(400) + "s", null, "not a safe integer of milliseconds"],
  ];
  for (const [input, expected, note] of table) {
    assertEquals(parseDuration(input), expected, `${JSON.stringify(input)} (${note})`);
  }
});

Deno.test("formatDuration writes what parseDuration reads back, in the largest exact unit", () => {
  const table: Array<[number, string]> = [
    [0, "0ms"],
    [1, "1ms"],
    [1500, "1500ms"],
    [30_000, "30s"],
    [90_000, "90s"],
    [120_000, "2m"],
    [5_400_000, "90m"],
    [7_200_000, "2h"],
    [MAX_TIMER_MS, "2147483647ms"],
  ];
  for (const [ms, text] of table) {
    assertEquals(formatDuration(ms), text);
    assertEquals(parseDuration(text), ms, text);
  }
});

Deno.test("a timeout is 1 ms to 2^31-1 ms: a longer timer fires after about 1 ms", async () => {
  assertEquals(timeoutProblem(1), null);
  assertEquals(timeoutProblem(MAX_TIMER_MS), null);
  for (const bad of [0, 0.5, MAX_TIMER_MS + 1, 2 ** 40, Number.NaN]) {
    assertMatch(String(timeoutProblem(bad)), /^must be from 1ms to 2147483647ms/, String(bad));
  }
  // Why the ceiling exists: the runtime stores the delay in 32 bits and fires at once.
  const started = performance.now();
  await new Promise((done) => setTimeout(done, MAX_TIMER_MS + 1));
  const waited = performance.now() - started;
  assertEquals(waited < 1000, true, `a 2^31 ms timer fired after ${waited} ms`);
});

Deno.test("the sandbox refuses a timeout its timer cannot hold, before building anything", async () => {
  for (const timeoutMs of [0, 2 ** 31, 30 * 24 * 3_600_000]) {
    const error = await exec({ workspace: "/nonexistent" }, ["true"], { timeoutMs }).then(
      () => null,
      (e: unknown) => e,
    );
    assertEquals(error instanceof SandboxPolicyError, true, String(error));
    assertMatch((error as Error).message, /timeoutMs must be from 1ms to 2147483647ms/);
  }
});

Deno.test("--timeout: a duration within the timer's range, else a usage error naming it", () => {
  assertEquals(parseTimeoutFlag("2s"), 2000);
  assertEquals(parseTimeoutFlag("5"), 5000);
  assertMatch(
    assertThrows(() => parseTimeoutFlag("soon"), UsageError).message,
    /--timeout must be a duration/,
  );
  assertMatch(
    assertThrows(() => parseTimeoutFlag("0s"), UsageError).message,
    /--timeout must be from 1ms/,
  );
  assertMatch(
    assertThrows(() => parseTimeoutFlag("600h"), UsageError).message,
    /--timeout must be from 1ms to 2147483647ms \(about 24\.8 days\), got 600h/,
  );
});
