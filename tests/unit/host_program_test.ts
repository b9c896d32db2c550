// The host programs of the limits paths (busctl, mkfs.ext4, mount) run through node:child_process
// in both runtimes: the exit code, stderr and a killing signal come back as before, and a
// program that is not installed is told apart (ENOENT), for "busctl is not installed".
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { delegateUserScope } from "../../src/sandbox/cgroup_delegate.ts";
import { isNotFound } from "../../src/sandbox/errno.ts";
import { runHostProgram } from "../../src/sandbox/host_program.ts";

Deno.test("host program: exit code and trimmed stderr; stdout is discarded", async () => {
  const out = await runHostProgram("sh", ["-c", "echo out; echo ' why ' >&2; exit 3"]);
  assertEquals(out, { code: 3, stderr: "why" });
  assertEquals(await runHostProgram("true", []), { code: 0, stderr: "" });
});

Deno.test("host program: a program killed by a signal reports 128 + its number", async () => {
  assertEquals((await runHostProgram("sh", ["-c", "kill -9 $$"])).code, 137);
});

Deno.test("host program: a missing program rejects with ENOENT, which isNotFound recognizes", async () => {
  const error = await assertRejects(() => runHostProgram("coop-no-such-program", ["x"]), Error);
  assert(isNotFound(error), String(error));
  assertEquals((error as { code?: string }).code, "ENOENT");
  // The way delegation reports it, through the real runner.
  const missing = (_: string, args: string[]) => runHostProgram("coop-no-such-busctl", args);
  const outcome = await delegateUserScope(missing, () => "0::/user.slice\n", 0);
  assertEquals(outcome.scope, null);
  assert(outcome.detail.includes("(busctl is not installed)"), outcome.detail);
});

Deno.test("isNotFound: ENOENT codes and Deno's NotFound, nothing else", () => {
  assert(isNotFound(Object.assign(new Error("x"), { code: "ENOENT" })));
  assert(isNotFound(new Deno.errors.NotFound("x")));
  assert(!isNotFound(Object.assign(new Error("x"), { code: "EACCES" })));
  assert(!isNotFound(new Error("ENOENT in the message only")));
  assert(!isNotFound(undefined));
});
