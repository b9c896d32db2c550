// Issue 14, item 6: sizes and deletions of what a sandbox wrote never follow a symlink, and
// directories the sandbox made unwritable (or unreadable) are still removed.
import { ok, strictEqual } from "node:assert/strict";
import fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeAll, removeTree, treeSize } from "../../src/environments/sandbox_tree.ts";

function tree(): { root: string; victim: string; upper: string } {
  const root = fs.mkdtempSync(join(tmpdir(), "sandbox-tree-"));
  const victim = join(root, "victim");
  fs.mkdirSync(join(victim, "keep"), { recursive: true });
  fs.writeFileSync(join(victim, "keep", "precious"), "x".repeat(100_000));
  fs.writeFileSync(join(victim, "file"), "y");
  const upper = join(root, "upper");
  fs.mkdirSync(join(upper, "usr/local/bin"), { recursive: true });
  fs.writeFileSync(join(upper, "usr/local/bin/tool"), "z".repeat(50_000));
  // What a hostile sandbox leaves: links to the outside, at the top and deep down.
  fs.symlinkSync(victim, join(upper, "link-dir"));
  fs.symlinkSync(join(victim, "file"), join(upper, "usr/link-file"));
  fs.symlinkSync("/", join(upper, "usr/local/root"));
  // Directories without permissions (a package's 0700 cache, a 000 directory, a 0500 one).
  fs.mkdirSync(join(upper, "locked/inner"), { recursive: true });
  fs.writeFileSync(join(upper, "locked/inner/f"), "q");
  fs.chmodSync(join(upper, "locked/inner"), 0o000);
  fs.chmodSync(join(upper, "locked"), 0o500);
  return { root, victim, upper };
}

Deno.test("sandbox tree: size by lstat counts links as links, never their targets", () => {
  const { root, upper } = tree();
  try {
    const size = treeSize(upper);
    // 50 KB of the tool, not the 100 KB behind link-dir nor anything under /.
    ok(size.bytes >= 50_000 && size.bytes < 100_000, String(size.bytes));
    strictEqual(treeSize(join(root, "missing")).entries, 0);
    const bounded = treeSize(upper, 3);
    ok(bounded.partial && bounded.entries <= 3);
  } finally {
    fs.chmodSync(join(upper, "locked"), 0o700);
    fs.chmodSync(join(upper, "locked/inner"), 0o700);
    fs.rmSync(root, { recursive: true, force: true });
  }
});

Deno.test("sandbox tree: removal deletes links, not their targets, and empties locked dirs", () => {
  const { root, victim, upper } = tree();
  try {
    const victimMode = fs.statSync(victim).mode;
    const removed = removeTree(upper);
    ok(removed.bytes >= 50_000, String(removed.bytes));
    ok(!fs.existsSync(upper), "the upper is gone");
    strictEqual(fs.readFileSync(join(victim, "keep", "precious"), "utf8").length, 100_000);
    strictEqual(fs.readFileSync(join(victim, "file"), "utf8"), "y");
    strictEqual(fs.statSync(victim).mode, victimMode, "no chmod went through a link");
    strictEqual(removeTree(upper).entries, 0, "a missing tree frees nothing");
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
});

Deno.test("sandbox tree: a top-level symlink is removed as a link", () => {
  const { root, victim, upper } = tree();
  try {
    const link = join(root, "link");
    fs.symlinkSync(victim, link);
    removeTree(link);
    ok(!fs.existsSync(link) && fs.existsSync(join(victim, "keep", "precious")));
  } finally {
    fs.chmodSync(join(upper, "locked"), 0o700);
    fs.chmodSync(join(upper, "locked/inner"), 0o700);
    fs.rmSync(root, { recursive: true, force: true });
  }
});

/** What Deno's recursive remove throws when a directory gained an entry while it was emptied. */
function grewError(path: string): Error {
  return Object.assign(new Error(`Directory not empty (os error 39): remove '${path}'`), {
    code: "ENOTEMPTY",
  });
}

Deno.test("sandbox tree: a directory that grows during the removal (a gateway's work pool) still goes", () => {
  const root = fs.mkdtempSync(join(tmpdir(), "sandbox-tree-grew-"));
  const layer = join(root, "layer");
  fs.mkdirSync(join(layer, "work"), { recursive: true });
  let attempts = 0;
  removeAll(layer, (path) => {
    attempts++;
    // As a gateway's refill does: another empty work directory appears mid-removal.
    if (attempts <= 2) {
      fs.mkdirSync(join(path, "work", `w-${attempts}`));
      throw grewError(join(path, "work"));
    }
    Deno.removeSync(path, { recursive: true });
  });
  strictEqual(attempts, 3);
  ok(!fs.existsSync(layer), "the layer is gone");
  fs.rmSync(root, { recursive: true });
});

Deno.test("sandbox tree: a removal gives up on a directory that never stops growing", () => {
  let attempts = 0;
  let thrown: unknown;
  try {
    removeAll("/nonexistent/layer", (path) => {
      attempts++;
      throw grewError(path);
    });
  } catch (error) {
    thrown = error;
  }
  strictEqual((thrown as { code?: string }).code, "ENOTEMPTY");
  strictEqual(attempts, 6, "bounded: the first try and five more");
});

Deno.test("sandbox tree: other removal errors are not retried", () => {
  let attempts = 0;
  let thrown: unknown;
  try {
    removeAll("/nonexistent/layer", () => {
      attempts++;
      throw new Deno.errors.PermissionDenied("denied");
    });
  } catch (error) {
    thrown = error;
  }
  ok(thrown instanceof Deno.errors.PermissionDenied);
  strictEqual(attempts, 1);
});
