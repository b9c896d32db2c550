// The file tools' confinement (ffi/beneath.c). A check-then-open race is simulated by the end
// state it would produce: a symlink that already points outside when the open happens.
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { BeneathError, readFileBeneath, writeFileBeneath } from "../../src/sandbox/mod.ts";

async function withDirs(fn: (root: string, outside: string) => Promise<void>): Promise<void> {
  const root = await Deno.makeTempDir({ prefix: "coop-beneath-root-" });
  const outside = await Deno.makeTempDir({ prefix: "coop-beneath-outside-" });
  try {
    await Deno.writeTextFile(`${outside}/secret`, "OUTSIDE");
    await fn(root, outside);
  } finally {
    await Deno.remove(root, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
}

Deno.test("reads and writes inside the root, through symlinks that stay inside", async () => {
  await withDirs(async (root) => {
    await writeFileBeneath(root, "a/b/c.txt", new TextEncoder().encode("hello"));
    await Deno.symlink("a/b", `${root}/inner-link`);
    const bytes = await readFileBeneath(root, "inner-link/c.txt", 1024);
    assertEquals(new TextDecoder().decode(bytes), "hello");
  });
});

Deno.test("a symlink swapped to point outside is refused for reading (EXDEV), nothing leaks", async () => {
  await withDirs(async (root, outside) => {
    await Deno.symlink(outside, `${root}/swapped`);
    await Deno.symlink(`${outside}/secret`, `${root}/direct`);
    await Deno.symlink("../../..", `${root}/dotdot`);
    for (const rel of ["swapped/secret", "direct", `dotdot${outside}/secret`]) {
      const error = await assertRejects(() => readFileBeneath(root, rel, 1024), BeneathError);
      assert(["EXDEV", "ELOOP"].includes(error.code), `${rel}: ${error.code}`);
    }
  });
});

Deno.test("a symlink swapped to point outside is refused for writing; the outside is unchanged", async () => {
  await withDirs(async (root, outside) => {
    await Deno.symlink(outside, `${root}/swapped`);
    await Deno.symlink(`${outside}/secret`, `${root}/direct`);
    for (const rel of ["swapped/secret", "direct", "swapped/new/file"]) {
      const error = await assertRejects(
        () => writeFileBeneath(root, rel, new TextEncoder().encode("PWNED")),
        BeneathError,
      );
      assert(["EXDEV", "ELOOP"].includes(error.code), `${rel}: ${error.code}`);
    }
    assertEquals(await Deno.readTextFile(`${outside}/secret`), "OUTSIDE");
    assertEquals([...Deno.readDirSync(outside)].map((e) => e.name), ["secret"]);
  });
});

Deno.test("fifos and devices are refused, large files report their size", async () => {
  await withDirs(async (root) => {
    const mkfifo = await new Deno.Command("mkfifo", { args: [`${root}/fifo`] }).output();
    assert(mkfifo.success);
    const fifo = await assertRejects(() => readFileBeneath(root, "fifo", 10), BeneathError);
    assertEquals(fifo.code, "EINVAL");
    await Deno.writeTextFile(`${root}/big`, "x".repeat(100));
    const big = await assertRejects(() => readFileBeneath(root, "big", 10), BeneathError);
    assertEquals([big.code, big.size], ["EFBIG", 100]);
  });
});
