import { ok, strictEqual } from "node:assert/strict";
import fc from "fast-check";
import { truncateHeadTail } from "../../src/tools/truncation.ts";

Deno.test("short text is returned unchanged", () => {
  strictEqual(truncateHeadTail("hello", 100), "hello");
});

Deno.test("long text keeps head and tail and says how much was cut", () => {
  const text = "HEAD" + "x".repeat(10_000) + "TAIL";
  const out = truncateHeadTail(text, 200);
  ok(out.startsWith("HEAD"));
  ok(out.endsWith("TAIL"));
  const omitted = Number(/\[… (\d+) characters truncated …\]/.exec(out)![1]);
  strictEqual(out.length - out.match(/\n\[…[^\]]*\]\n/)![0].length + omitted, text.length);
});

Deno.test("truncation never exceeds the limit and never splits a surrogate pair", () => {
  fc.assert(
    fc.property(
      fc.string({ unit: "grapheme", maxLength: 2000 }),
      fc.integer({ min: 60, max: 500 }),
      (s, max) => {
        const out = truncateHeadTail(s, max);
        if (s.length <= max) strictEqual(out, s);
        else ok(out.length <= max, `${out.length} > ${max}`);
        ok(out.isWellFormed());
      },
    ),
    { numRuns: 1000 },
  );
});
