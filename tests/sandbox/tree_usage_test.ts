// The accounting quota's on-loop measurement (src/sandbox/tree_usage.ts, coop_tree_usage in
// ffi/dir_list.c) counts exactly what the reference walk (measureWorkspace) counts, and hands
// anything larger than its bound to the worker.
import { assertEquals } from "../assert.ts";
import { loadTrampoline } from "../../src/sandbox/ffi.ts";
import {
  measureWorkspaceBounded,
  measureWorkspaceOnLoop,
  ON_LOOP_ENTRIES,
} from "../../src/sandbox/tree_usage.ts";
import { measureWorkspace } from "../../src/sandbox/workspace_usage.ts";

async function withTree(fn: (ws: string, outside: string) => Promise<void>): Promise<void> {
  const parent = await Deno.makeTempDir({ prefix: "coop-tree-" });
  const ws = `${parent}/ws`, outside = `${parent}/outside`;
  Deno.mkdirSync(`${ws}/a/b/c`, { recursive: true });
  Deno.mkdirSync(outside);
  Deno.writeFileSync(`${outside}/big`, new Uint8Array(1 << 20));
  Deno.writeFileSync(`${ws}/a/data`, new Uint8Array(100_000).fill(1));
  Deno.writeTextFileSync(`${ws}/a/b/c/deep`, "x");
  Deno.linkSync(`${ws}/a/data`, `${ws}/a/b/hardlink`); // one inode, counted once
  Deno.symlinkSync(outside, `${ws}/a/to-outside`); // never followed
  Deno.symlinkSync(`${outside}/big`, `${ws}/link-to-big`);
  const sparse = Deno.openSync(`${ws}/sparse`, { create: true, write: true });
  sparse.truncateSync(1 << 30); // allocated blocks, not size
  sparse.close();
  try {
    await fn(ws, outside);
  } finally {
    await Deno.remove(parent, { recursive: true });
  }
}

Deno.test("tree usage: the C walk counts what the reference walk counts", async () => {
  const lib = await loadTrampoline();
  await withTree(async (ws) => {
    const reference = measureWorkspace(ws, 1000);
    assertEquals(reference.complete, true);
    assertEquals(reference.inodes, 8); // the hard link is not counted again
    assertEquals(measureWorkspaceOnLoop(lib, ws, 1000), reference);
    assertEquals(await measureWorkspaceBounded(ws, 1000), reference);
    // Stopped at maxEntries (an inode quota + 1): as many entries, marked incomplete.
    const stopped = measureWorkspaceOnLoop(lib, ws, 4);
    assertEquals({ ...stopped!, bytes: 0 }, { bytes: 0, inodes: 4, complete: false });
    assertEquals(measureWorkspace(ws, 4).inodes, 4);
  });
});

Deno.test("tree usage: past its bound, or too wide, the walk goes to the worker", async () => {
  const lib = await loadTrampoline();
  await withTree(async (ws) => {
    for (let i = 0; i < ON_LOOP_ENTRIES; i++) Deno.writeTextFileSync(`${ws}/a/f${i}`, "x");
    assertEquals(measureWorkspaceOnLoop(lib, ws, 100_000), null);
    assertEquals(await measureWorkspaceBounded(ws, 100_000), measureWorkspace(ws, 100_000));
  });
  await withTree(async (ws) => {
    // More directories pending at once than the C walk holds open.
    for (let i = 0; i < 70; i++) Deno.mkdirSync(`${ws}/d${i}`);
    assertEquals(measureWorkspaceOnLoop(lib, ws, 100_000), null);
    assertEquals(await measureWorkspaceBounded(ws, 100_000), measureWorkspace(ws, 100_000));
  });
});

Deno.test("tree usage: a missing workspace is left to the worker, which reports it", async () => {
  const lib = await loadTrampoline();
  assertEquals(measureWorkspaceOnLoop(lib, "/nonexistent/coop-tree", 10), null);
});
