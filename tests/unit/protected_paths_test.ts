/** Which workspace paths are re-mounted read-only: named entries at depth 0 and 1, no symlinks. */
import { protectedPathsIn, protectedPathsOffLoop } from "../../src/sandbox/protected_paths.ts";
import { SandboxWorkspaceError } from "../../src/sandbox/errors.ts";
import { resolvePolicy } from "../../src/sandbox/policy.ts";
import { assertEquals, assertMatch, assertRejects, assertThrows } from "../assert.ts";

Deno.test("protected paths: .git at the top and one level down; deeper, symlinked or absent ones not", async () => {
  const ws = await Deno.makeTempDir({ prefix: "coop-protect-" });
  try {
    for (const dir of [".git", "app/.git", "lib/deep/.git", "other", "wt"]) {
      await Deno.mkdir(`${ws}/${dir}`, { recursive: true });
    }
    // A worktree's .git is a file: protected too.
    await Deno.writeTextFile(`${ws}/wt/.git`, "gitdir: /elsewhere\n");
    await Deno.symlink("/tmp", `${ws}/other/.git`);
    assertEquals(protectedPathsIn(ws, [".git"]), [".git", "app/.git", "wt/.git"]);
    assertEquals(protectedPathsIn(ws, []), []);
    assertEquals(protectedPathsIn(`${ws}/missing`, [".git"]), []);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});

Deno.test("protected names default to .git and must be plain names", () => {
  assertEquals(resolvePolicy({ workspace: "/tmp" }).protectedNames, [".git"]);
  assertEquals(resolvePolicy({ workspace: "/tmp", protectedNames: [] }).protectedNames, []);
  for (const bad of ["a/b", "..", "."]) {
    assertThrows(() => resolvePolicy({ workspace: "/tmp", protectedNames: [bad] }), Error);
  }
});

Deno.test("protected paths: past the entry limit the lookup refuses, on or off the event loop", async () => {
  const ws = await Deno.makeTempDir({ prefix: "coop-protect-" });
  try {
    await Deno.mkdir(`${ws}/app/.git`, { recursive: true });
    for (let i = 0; i < 20; i++) await Deno.writeTextFile(`${ws}/f${i}`, "");
    assertEquals(protectedPathsIn(ws, [".git"], 21), ["app/.git"]);
    assertEquals(await protectedPathsOffLoop(ws, [".git"], 21), ["app/.git"]);
    const error = assertThrows(() => protectedPathsIn(ws, [".git"], 20), SandboxWorkspaceError);
    assertEquals(error.code, "sandbox.workspace_too_large");
    const offLoop = await assertRejects(
      () => protectedPathsOffLoop(ws, [".git"], 20),
      SandboxWorkspaceError,
    );
    assertMatch(offLoop.message, /more than 20 entries at its top, too many to verify/);
  } finally {
    await Deno.remove(ws, { recursive: true });
  }
});
