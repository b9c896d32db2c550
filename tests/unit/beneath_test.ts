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

Deno.test("a write that fails part-way (file size limit, as a full disk) leaves the old file whole", async () => {
  await withDirs(async (root) => {
    await Deno.writeTextFile(`${root}/notes.txt`, "ORIGINAL");
    const child = new URL("./fixtures/write_beneath_limited.ts", import.meta.url).pathname;
    // An ignored signal stays ignored across exec; a listener in the child would come too late.
    const out = await new Deno.Command("sh", {
      args: [
        "-c",
        'trap "" XFSZ; exec prlimit --fsize=65536 "$@"',
        "sh",
        Deno.execPath(),
        "run",
        "--no-code-cache",
        "--allow-all",
        child,
        root,
        "notes.txt",
        String(256 * 1024),
      ],
    }).output();
    const said = new TextDecoder().decode(out.stdout).trim();
    assertEquals(said, "EFBIG", new TextDecoder().decode(out.stderr));
    assertEquals(await Deno.readTextFile(`${root}/notes.txt`), "ORIGINAL");
    assertEquals([...Deno.readDirSync(root)].map((e) => e.name), ["notes.txt"], "no temporary");
  });
});

Deno.test("a replaced file keeps its mode, never a set-id bit; a new one is a plain file", async () => {
  await withDirs(async (root) => {
    await Deno.writeTextFile(`${root}/run.sh`, "old");
    await Deno.chmod(`${root}/run.sh`, 0o750);
    await writeFileBeneath(root, "run.sh", new TextEncoder().encode("new"));
    assertEquals(await Deno.readTextFile(`${root}/run.sh`), "new");
    assertEquals(Deno.statSync(`${root}/run.sh`).mode! & 0o7777, 0o750);
    await writeFileBeneath(root, "fresh.txt", new TextEncoder().encode("x"));
    const fresh = Deno.statSync(`${root}/fresh.txt`);
    assert(fresh.isFile && (fresh.mode! & 0o7000) === 0 && (fresh.mode! & 0o600) === 0o600);
  });
});

Deno.test("hard links and the owner's symlinks are written through, in place", async () => {
  await withDirs(async (root) => {
    await Deno.writeTextFile(`${root}/a.txt`, "old");
    await Deno.link(`${root}/a.txt`, `${root}/b.txt`);
    await writeFileBeneath(root, "a.txt", new TextEncoder().encode("new"));
    assertEquals(await Deno.readTextFile(`${root}/b.txt`), "new", "the other link sees it");
    await Deno.symlink("a.txt", `${root}/link`);
    await writeFileBeneath(root, "link", new TextEncoder().encode("via link"));
    assert(Deno.lstatSync(`${root}/link`).isSymlink, "the owner's symlink stays a symlink");
    assertEquals(await Deno.readTextFile(`${root}/a.txt`), "via link");
    const refused = await assertRejects(
      () => writeFileBeneath(root, "link", new TextEncoder().encode("x"), { noSymlinks: true }),
      BeneathError,
    );
    assertEquals(refused.code, "ELOOP");
  });
});

Deno.test("a directory, a fifo or a name a sandbox planted is never written through", async () => {
  await withDirs(async (root, outside) => {
    await Deno.mkdir(`${root}/dir`);
    const dir = await assertRejects(
      () => writeFileBeneath(root, "dir", new TextEncoder().encode("x")),
      BeneathError,
    );
    assertEquals(dir.code, "EISDIR");
    const mkfifo = await new Deno.Command("mkfifo", { args: [`${root}/fifo`] }).output();
    assert(mkfifo.success);
    const fifo = await assertRejects(
      () => writeFileBeneath(root, "fifo", new TextEncoder().encode("x")),
      BeneathError,
    );
    assertEquals(fifo.code, "EINVAL");
    // The temporary's names (ffi/beneath.c: pid << 20 ^ a counter, in hex) planted as symlinks
    // to the outside: O_EXCL never follows one; the write succeeds under a free name or fails
    // (EEXIST), and either way the outside is unchanged.
    for (let counter = 1; counter <= 512; counter++) {
      const n = ((BigInt(Deno.pid) << 20n) ^ BigInt(counter)).toString(16).padStart(16, "0");
      await Deno.symlink(`${outside}/secret`, `${root}/.coop-write-${n}`);
    }
    const planted = await writeFileBeneath(root, "ok.txt", new TextEncoder().encode("fine"))
      .then(() => "written", (error) => error instanceof BeneathError ? error.code : error);
    assert(["written", "EEXIST"].includes(planted), String(planted));
    assertEquals(await Deno.readTextFile(`${outside}/secret`), "OUTSIDE");
  });
});

Deno.test({
  name: "a writable file in a directory the gateway may not write in is still written, in place",
  ignore: Deno.uid() === 0, // root writes in any directory
  fn: async () => {
    await withDirs(async (root) => {
      await Deno.mkdir(`${root}/locked`);
      await Deno.writeTextFile(`${root}/locked/notes.txt`, "old");
      await Deno.chmod(`${root}/locked`, 0o555);
      try {
        await writeFileBeneath(root, "locked/notes.txt", new TextEncoder().encode("new"));
        assertEquals(await Deno.readTextFile(`${root}/locked/notes.txt`), "new");
      } finally {
        await Deno.chmod(`${root}/locked`, 0o755);
      }
    });
  },
});
