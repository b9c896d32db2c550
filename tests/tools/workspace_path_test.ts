import { rejects, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { resolveScopedPath } from "../../src/tools/workspace_path.ts";

async function withScope(fn: (root: string, outside: string) => Promise<void>): Promise<void> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-path-" }));
  const root = join(base, "bob");
  const outside = join(base, "alice");
  await Deno.mkdir(root);
  await Deno.mkdir(outside);
  await Deno.writeTextFile(join(outside, "secret.txt"), "s3cret");
  try {
    await fn(root, outside);
  } finally {
    await Deno.remove(base, { recursive: true });
  }
}

Deno.test("relative and /work paths resolve inside the scope", async () => {
  await withScope(async (root) => {
    const scope = { hostRoot: root, visibleRoot: "/work" };
    strictEqual(await resolveScopedPath("a/b.txt", scope), join(root, "a/b.txt"));
    strictEqual(await resolveScopedPath("/work/a.txt", scope), join(root, "a.txt"));
    strictEqual(await resolveScopedPath("/work", scope), root);
    strictEqual(await resolveScopedPath("./x", scope), join(root, "x"));
  });
});

Deno.test("'..' and absolute paths outside the scope are refused", async () => {
  await withScope(async (root, outside) => {
    const scope = { hostRoot: root, visibleRoot: "/work" };
    await rejects(resolveScopedPath("../alice/secret.txt", scope), /must not contain/);
    await rejects(resolveScopedPath("a/../../x", scope), /must not contain/);
    await rejects(resolveScopedPath(join(outside, "secret.txt"), scope), /outside your workspace/);
    await rejects(resolveScopedPath("/etc/passwd", scope), /outside your workspace/);
    await rejects(resolveScopedPath("/workspace/x", scope), /outside your workspace/);
    await rejects(resolveScopedPath("", scope), /non-empty/);
  });
});

Deno.test("symlinks that leave the scope are refused, also for files not yet created", async () => {
  await withScope(async (root, outside) => {
    const scope = { hostRoot: root, visibleRoot: "/work" };
    await Deno.symlink(outside, join(root, "escape"));
    await Deno.symlink(join(outside, "secret.txt"), join(root, "secret-link"));
    await Deno.symlink(join(outside, "nope"), join(root, "dangling"));
    await rejects(resolveScopedPath("escape/secret.txt", scope), /outside your workspace/);
    await rejects(resolveScopedPath("escape/new/file.txt", scope), /outside your workspace/);
    await rejects(resolveScopedPath("secret-link", scope), /outside your workspace/);
    await rejects(resolveScopedPath("dangling", scope), /points nowhere/);
  });
});

Deno.test("symlinks that stay inside the scope are followed", async () => {
  await withScope(async (root) => {
    await Deno.mkdir(join(root, "real"));
    await Deno.symlink(join(root, "real"), join(root, "alias"));
    const scope = { hostRoot: root, visibleRoot: "/work" };
    strictEqual(await resolveScopedPath("alias/f.txt", scope), join(root, "real", "f.txt"));
  });
});
