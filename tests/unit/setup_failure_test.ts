import { assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";
import { setupFailure } from "../../src/sandbox/setup_failure.ts";
import { stepNumber } from "../../src/sandbox/protocol.ts";
import { ERRNO } from "../../src/sandbox/errno.ts";

Deno.test("a real ipc-limits failure names the rlimit path and what to do", () => {
  const error = setupFailure(stepNumber("ipc-limits"), ERRNO.EROFS);
  assertEquals([error.step, error.errno], ["ipc-limits", ERRNO.EROFS]);
  assertMatch(error.message, /step "ipc-limits": EROFS .* rlimit path.*drop the memory limit/);
});

Deno.test("a forced ipc-limits failure (ECANCELED, tests only) carries no hint", () => {
  const error = setupFailure(stepNumber("ipc-limits"), ERRNO.ECANCELED);
  assertNotIncludes(error.message, "rlimit path");
});
