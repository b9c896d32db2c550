import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  atLeast,
  isTrustLevel,
  leastTrusted,
  memoryReadersOf,
  type MemoryStore,
  memoryStoresFor,
  memoryWritableStoresFor,
  TRUST_LEVELS,
  type TrustLevel,
  trustRank,
} from "../../src/trust/trust_level.ts";

Deno.test("trust order is owner < full < inner < familiar < public", () => {
  deepStrictEqual(TRUST_LEVELS.map(trustRank), [0, 1, 2, 3, 4]);
  ok(atLeast("owner", "full"));
  ok(!atLeast("familiar", "inner"));
});

Deno.test("leastTrusted picks the least trusted input", () => {
  strictEqual(leastTrusted("owner", "familiar"), "familiar");
  strictEqual(leastTrusted("inner", "full", "owner"), "inner");
  strictEqual(leastTrusted("owner"), "owner");
  strictEqual(leastTrusted("full", "public", "inner"), "public");
});

Deno.test("memory stores per level follow the design table", () => {
  deepStrictEqual(memoryStoresFor("owner"), ["private", "shared", "social"]);
  deepStrictEqual(memoryStoresFor("full"), ["private", "shared", "social"]);
  deepStrictEqual(memoryStoresFor("inner"), ["shared", "social"]);
  deepStrictEqual(memoryStoresFor("familiar"), ["social"]);
  deepStrictEqual(memoryStoresFor("public"), []);
});

Deno.test("isTrustLevel accepts only the five names", () => {
  ok(isTrustLevel("owner"));
  ok(!isTrustLevel("admin"));
  ok(!isTrustLevel(3));
});

Deno.test("readers per store and writable stores per level (no write-down) follow docs/memory.md", () => {
  deepStrictEqual(memoryReadersOf("private"), ["owner", "full"]);
  deepStrictEqual(memoryReadersOf("shared"), ["owner", "full", "inner"]);
  deepStrictEqual(memoryReadersOf("social"), ["owner", "full", "inner", "familiar"]);
  const expected: Array<[TrustLevel, MemoryStore[]]> = [
    ["owner", ["private", "shared", "social"]],
    ["full", ["private"]],
    ["inner", ["shared"]],
    ["familiar", ["social"]],
    ["public", []],
  ];
  for (const [level, stores] of expected) {
    deepStrictEqual(memoryWritableStoresFor(level), stores, level);
  }
});
