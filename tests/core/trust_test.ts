import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import {
  atLeast,
  isTrustLevel,
  leastTrusted,
  memoryStoresFor,
  TRUST_LEVELS,
  trustRank,
} from "../../src/core/trust.ts";

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
