import { assertEquals, assertMatch } from "../assert.ts";
import { join } from "node:path";
import { workspaceAccessProblems } from "../../src/config/check_workspace_access.ts";

/**
 * A fresh directory whose parent chain (`/`, the temp dir) lets others through, so the modes
 * the test gives below it decide; removed afterwards.
 */
async function withBase(fn: (base: string) => Promise<void> | void): Promise<void> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-ws-access-" }));
  try {
    await Deno.chmod(base, 0o755);
    await fn(base);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

async function dir(path: string, mode: number): Promise<string> {
  await Deno.mkdir(path, { recursive: true });
  await Deno.chmod(path, mode);
  return path;
}

const codes = (dirs: string[]) => workspaceAccessProblems(dirs).map((p) => [p.code, p.path]);

Deno.test("a 0700 workspace, and anything below it, lets nobody else in", () =>
  withBase(async (base) => {
    const ws = await dir(join(base, "ws"), 0o700);
    const bob = await dir(join(ws, "bob"), 0o755); // open, but its parent is closed
    assertEquals(codes([ws, bob]), []);
  }));

Deno.test("a workspace readable or traversable by group or others is named, with the fix", () =>
  withBase(async (base) => {
    for (const mode of [0o755, 0o750, 0o711, 0o705, 0o701]) {
      const ws = await dir(join(base, `ws-${mode.toString(8)}`), mode);
      const problems = workspaceAccessProblems([ws]);
      assertEquals(problems.map((p) => [p.code, p.path]), [["workspace.open", ws]]);
      assertMatch(problems[0].message, new RegExp(`mode 0${mode.toString(8)}`));
      assertMatch(problems[0].message, new RegExp(`run chmod 700 ${ws}`));
    }
  }));

Deno.test("an open per-user directory under an open root is named with the root", () =>
  withBase(async (base) => {
    const ws = await dir(join(base, "ws"), 0o755);
    const bob = await dir(join(ws, "bob"), 0o755);
    const carol = await dir(join(ws, "carol"), 0o700);
    assertEquals(codes([ws, bob, carol]), [["workspace.open", ws], ["workspace.open", bob]]);
  }));

Deno.test("an ancestor others cannot traverse closes everything below it", () =>
  withBase(async (base) => {
    const home = await dir(join(base, "home"), 0o750); // group only: others stop here
    const ws = await dir(join(home, "ws"), 0o755);
    assertEquals(codes([ws]), []);
  }));

Deno.test("an ancestor writable by others without the sticky bit is named", () =>
  withBase(async (base) => {
    const shared = await dir(join(base, "shared"), 0o777);
    const ws = await dir(join(shared, "ws"), 0o700);
    const problems = workspaceAccessProblems([ws, join(ws, "bob")]);
    assertEquals(problems.map((p) => [p.code, p.path]), [["workspace.ancestor_writable", shared]]);
    assertMatch(problems[0].message, /mode 0777\) is writable by other local users/);
    assertMatch(problems[0].message, new RegExp(`run chmod o-w ${shared}`));
    // The sticky bit (like /tmp's) keeps others from moving what is not theirs.
    await Deno.chmod(shared, 0o1777);
    assertEquals(codes([ws]), []);
  }));

Deno.test("a workspace that does not exist yet is judged by the directories above it", () =>
  withBase(async (base) => {
    const open = await dir(join(base, "open"), 0o777);
    assertEquals(codes([join(open, "not", "yet")]), [["workspace.ancestor_writable", open]]);
    assertEquals(codes([join(base, "closed", "not", "yet")]), []);
  }));

Deno.test("symlinks in the path are judged by their targets", () =>
  withBase(async (base) => {
    const real = await dir(join(base, "real"), 0o755);
    await Deno.symlink(real, join(base, "link"));
    assertEquals(codes([join(base, "link")]), [["workspace.open", real]]);
  }));

Deno.test("a fake mode table: a world-writable / without sticky is named once", () => {
  const modes: Record<string, number> = { "/": 0o777, "/srv": 0o755, "/srv/ws": 0o700 };
  const problems = workspaceAccessProblems(
    ["/srv/ws", "/srv/ws/bob"],
    (path) => modes[path] ?? null,
  );
  assertEquals(problems.map((p) => [p.code, p.path]), [["workspace.ancestor_writable", "/"]]);
});
