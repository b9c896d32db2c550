import { assertEquals } from "../assert.ts";
import { sameSecret } from "../../src/sandbox/secret_compare.ts";

Deno.test("sameSecret: equal only for the exact same bytes, whatever the lengths", () => {
  const enc = (s: string) => new TextEncoder().encode(s);
  const table: Array<[string | Uint8Array, string | Uint8Array, boolean]> = [
    ["s3cret-token", "s3cret-token", true],
    ["", "", true],
    ["s3cret-token", "s3cret-tokeN", false],
    ["s3cret-token", "s3cret-token ", false], // a longer guess: no throw, just false
    ["s3cret-token", "s3cret", false], // a prefix
    ["s3cret-token", "", false],
    ["\u00e9", "\u00e9", true],
    ["\u00e9", "e\u0301", false], // the same glyph, other bytes
    [enc("bytes"), "bytes", true], // strings are compared as UTF-8
    [new Uint8Array([0, 255]), new Uint8Array([0, 254]), false],
  ];
  for (const [a, b, expected] of table) {
    assertEquals(sameSecret(a, b), expected, `${JSON.stringify(a)} vs ${JSON.stringify(b)}`);
  }
});
