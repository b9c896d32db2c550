// One sandbox's denial log (src/sandbox/proxy/denial_warnings.ts): a command refused without end
// gets a few warnings and counted summaries, never a line per denial.
import type { LogRecord } from "@logtape/logtape";
import { assertEquals } from "../assert.ts";
import { withCapturedLogs } from "../fixtures/captured_logs.ts";
import { until } from "../e2e/gateway_process.ts";
import {
  DENIAL_WARNINGS_PER_WINDOW,
  DenialWarnings,
} from "../../src/sandbox/proxy/denial_warnings.ts";

const denial = (i: number) => ({
  host: `h${i}.test`,
  port: 443,
  reason: "is not in the allowlist",
});

/** The records of `event`: each one's level and fields. */
function lines(records: LogRecord[], event: string): Record<string, unknown>[] {
  return records.filter((r) => r.properties.event === event).map((r) => ({
    level: r.level,
    ...r.properties,
  }));
}

Deno.test("denial log: 500 denials give a few warnings and one summary with the total", async () => {
  await withCapturedLogs((records) => {
    const warnings = new DenialWarnings({ command: "loop" });
    for (let i = 0; i < 500; i++) warnings.denied(denial(i));
    assertEquals(lines(records, "sandbox.proxy_denied").map((l) => l.host), [
      "h0.test",
      "h1.test",
      "h2.test",
      "h3.test",
      "h4.test",
    ]);
    assertEquals(lines(records, "sandbox.proxy_denied.suppressed"), [], "not before the end");
    warnings.end();
    assertEquals(lines(records, "sandbox.proxy_denied.suppressed"), [{
      level: "warning",
      event: "sandbox.proxy_denied.suppressed",
      command: "loop",
      suppressed: 500 - DENIAL_WARNINGS_PER_WINDOW,
      total: 500,
      host: "h499.test",
      port: 443,
      reason: "is not in the allowlist",
    }]);
    assertEquals(records.length, DENIAL_WARNINGS_PER_WINDOW + 1);
  });
});

Deno.test("denial log: the same denial again is counted, not logged again", async () => {
  await withCapturedLogs((records) => {
    const warnings = new DenialWarnings({ command: "retry" });
    for (let i = 0; i < 300; i++) warnings.denied(denial(i % 2));
    warnings.end();
    assertEquals(lines(records, "sandbox.proxy_denied").map((l) => l.host), ["h0.test", "h1.test"]);
    assertEquals(
      lines(records, "sandbox.proxy_denied.suppressed").map((l) => [l.suppressed, l.total]),
      [[298, 300]],
    );
  });
});

Deno.test("denial log: nothing counted, nothing summarized; end() twice logs once", async () => {
  await withCapturedLogs((records) => {
    const warnings = new DenialWarnings({ command: "once" });
    warnings.denied(denial(0));
    warnings.end();
    warnings.end();
    assertEquals(records.map((r) => r.properties.event), ["sandbox.proxy_denied"]);
  });
});

Deno.test("denial log: a window's end summarizes it, and the next one warns again", async () => {
  await withCapturedLogs(async (records) => {
    const warnings = new DenialWarnings({ command: "live", windowMs: 20 });
    try {
      for (let i = 0; i < 100; i++) warnings.denied(denial(i % 10));
      assertEquals(lines(records, "sandbox.proxy_denied").length, DENIAL_WARNINGS_PER_WINDOW);
      // A live session's proxy is not closed for hours: the summary comes without end().
      const summaries = () => lines(records, "sandbox.proxy_denied.suppressed");
      await until("the window's summary", () => summaries().length === 1);
      assertEquals(summaries().map((l) => [l.suppressed, l.total]), [[95, 100]]);
      warnings.denied(denial(0));
      assertEquals(lines(records, "sandbox.proxy_denied").length, DENIAL_WARNINGS_PER_WINDOW + 1);
    } finally {
      warnings.end();
    }
    assertEquals(records.length, DENIAL_WARNINGS_PER_WINDOW + 2, "nothing left to summarize");
  });
});

/** Timers set through the `setTimer` hook and not yet cleared or fired, and how to fire them. */
function fakeTimers() {
  const pending = new Map<number, () => void>();
  let next = 0;
  return {
    pending,
    setTimer(onEnd: () => void, _ms: number) {
      const id = next++;
      pending.set(id, onEnd);
      return () => pending.delete(id);
    },
    fireAll() {
      const due = [...pending.values()];
      pending.clear();
      due.forEach((onEnd) => onEnd());
    },
  };
}

Deno.test("denial log: no timer outlives end(), whether a window is open or not", async () => {
  await withCapturedLogs((records) => {
    const timers = fakeTimers();
    const warnings = new DenialWarnings({ command: "ended", setTimer: timers.setTimer });
    assertEquals(timers.pending.size, 0, "no denial, no timer");
    for (let i = 0; i < 10; i++) warnings.denied(denial(i));
    assertEquals(timers.pending.size, 1, "one timer per window");
    timers.fireAll();
    warnings.denied(denial(0));
    assertEquals(timers.pending.size, 1, "the next window's");
    warnings.end();
    assertEquals(timers.pending.size, 0);
    warnings.denied(denial(1)); // none come after the proxy closed; if one did, no timer either
    assertEquals(timers.pending.size, 0);
    assertEquals(lines(records, "sandbox.proxy_denied.suppressed").map((l) => l.total), [10]);
  });
});

Deno.test("denial log: denials provoked on purpose stay at debug level", async () => {
  await withCapturedLogs((records) => {
    const warnings = new DenialWarnings({ command: "self-test", expected: true });
    for (let i = 0; i < 50; i++) warnings.denied(denial(i));
    warnings.end();
    assertEquals(records, []);
  });
});
