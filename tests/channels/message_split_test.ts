import { assert, assertEquals } from "../assert.ts";
import { splitMessage } from "../../src/channels/message_split.ts";

Deno.test("splitMessage: short text is one piece, empty text one empty piece", () => {
  assertEquals(splitMessage("hello", 10), ["hello"]);
  assertEquals(splitMessage("", 10), [""]);
});

Deno.test("splitMessage: prefers paragraph, then line, then space breaks", () => {
  assertEquals(splitMessage("aaaa bbbb\ncc\n\ndddd", 14), ["aaaa bbbb\ncc", "dddd"]);
  assertEquals(splitMessage("aaaa bbbb\ncccc dddd", 14), ["aaaa bbbb", "cccc dddd"]);
  assertEquals(splitMessage("aaaa bbbb cccc dddd", 14), ["aaaa bbbb cccc", "dddd"]);
});

Deno.test("splitMessage: 10,000 characters without breaks are three pieces in order", () => {
  const text = Array.from({ length: 10_000 }, (_, i) => String.fromCharCode(97 + i % 26)).join("");
  const pieces = splitMessage(text, 4096);
  assertEquals(pieces.map((p) => p.length), [4096, 4096, 1808]);
  assertEquals(pieces.join(""), text);
});

Deno.test("splitMessage: never cuts a surrogate pair", () => {
  const text = "a".repeat(4095) + "😀" + "b";
  const pieces = splitMessage(text, 4096);
  assert(pieces.every((p) => p.length <= 4096));
  assertEquals(pieces.join(""), text);
  assertEquals(pieces[1].startsWith("😀"), true);
});
