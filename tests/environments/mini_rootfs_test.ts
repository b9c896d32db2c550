import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { execFileSync } from "node:child_process";
import { assert, assertEquals } from "../assert.ts";
import { buildMiniRootfs } from "../fixtures/mini_rootfs.ts";

Deno.test("a mini rootfs holds the programs and their libraries, and they run there", () => {
  const dir = mkdtempSync(join(tmpdir(), "coop-mini-"));
  try {
    buildMiniRootfs(dir);
    assert(existsSync(join(dir, "usr/bin/sh")));
    assert(existsSync(join(dir, "etc/os-release")));
    // The copied loader runs the copied shell against the copied libraries.
    const loader = execFileSync("sh", [
      "-c",
      `ls ${dir}/usr/lib64/ld-linux-* ${dir}/usr/lib/ld-linux-* 2>/dev/null | head -1`,
    ], { encoding: "utf8" }).trim();
    assert(loader !== "", "the dynamic loader was copied");
    const out = execFileSync(loader, [
      "--library-path",
      `${dir}/usr/lib/x86_64-linux-gnu:${dir}/usr/lib:${dir}/usr/lib64`,
      join(dir, "usr/bin/sh"),
      "-c",
      "echo ok",
    ], { encoding: "utf8" });
    assertEquals(out, "ok\n");
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
