// Issue 14, item 6: sizes and deletions of what a sandbox wrote never follow a symlink, and
// directories the sandbox made unwritable (or unreadable) are still removed.
import { ok, strictEqual } from "node:assert/strict";
import fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeTree, treeSize } from "../../src/environments/sandbox_tree.ts";

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
