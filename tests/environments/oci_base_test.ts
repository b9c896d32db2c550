// Issue 14, item 2: an OCI image (layout directory or archive) unpacked layer by layer —
// whiteouts and opaque directories honoured, every entry that could escape refused.
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeTree } from "../../src/environments/sandbox_tree.ts";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import {
  type LayerCompression,
  miniLayers,
  type TestEntry,
  writeOciArchive,
  writeOciLayout,
  writeTar,
} from "../fixtures/oci_image.ts";
import { OciImageError, unpackOciImage } from "../../src/environments/oci_base.ts";
import { LayerEscapeError } from "../../src/environments/layer_unpack.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "coop-oci-"));
  try {
    await fn(dir);
  } finally {
    removeTree(dir);
  }
}

/** Asserts what the two mini layers must leave in `rootfs`. */
function assertMiniResult(rootfs: string): void {
  assert(existsSync(join(rootfs, "usr/bin/sh")), "layer one's shell is there");
  assertEquals(lstatSync(join(rootfs, "usr/bin/sh")).mode & 0o777, 0o755);
  assert(lstatSync(join(rootfs, "bin")).isSymbolicLink(), "bin stays a symlink");
  assert(!existsSync(join(rootfs, "usr/bin/rm")), "the whiteout removed rm");
  assert(existsSync(join(rootfs, "usr/bin/cat")), "the whiteout removed only rm");
  assert(!existsSync(join(rootfs, "etc/os-release")), "the opaque /etc hides layer one's files");
  assertEquals(readFileSync(join(rootfs, "etc/hostname"), "utf8"), "layered\n");
  assertEquals(readFileSync(join(rootfs, "usr/share/doc/coop/README"), "utf8"), "second layer\n");
  assertEquals(lstatSync(join(rootfs, "usr/bin/suid-tool")).mode & 0o7777, 0o755, "no set-uid bit");
  assert(!existsSync(join(rootfs, "dev/null")), "no device node");
}

for (const compression of ["gzip", "none", "zstd"] as LayerCompression[]) {
  Deno.test(`OCI layout (${compression} layers): two layers, a whiteout, an opaque dir`, async () => {
    await withDir(async (dir) => {
      writeOciLayout(join(dir, "layout"), miniLayers(dir), compression);
      const skipped = await unpackOciImage(
        join(dir, "layout"),
        join(dir, "rootfs"),
        join(dir, "scratch"),
        {},
      );
      assertMiniResult(join(dir, "rootfs"));
      assertEquals(skipped, { devices: 1, fifos: 0, setIdBits: 1 });
    });
  });
}

Deno.test("OCI archive (a tar of the layout) unpacks the same", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "layout"), miniLayers(dir));
    writeOciArchive(join(dir, "layout"), join(dir, "image.tar"));
    await unpackOciImage(join(dir, "image.tar"), join(dir, "rootfs"), join(dir, "scratch"), {});
    assertMiniResult(join(dir, "rootfs"));
  });
});

Deno.test("an opaque marker keeps what its own layer put in the directory", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "layout"), [
      [{ name: "etc/", type: "dir" }, { name: "etc/old", data: "1" }],
      [{ name: "etc/new", data: "2" }, { name: "etc/.wh..wh..opq" }],
    ]);
    await unpackOciImage(join(dir, "layout"), join(dir, "rootfs"), join(dir, "scratch"), {});
    assert(!existsSync(join(dir, "rootfs/etc/old")));
    assertEquals(readFileSync(join(dir, "rootfs/etc/new"), "utf8"), "2");
  });
});

/** Each malicious layer and what must not appear outside the root. */
const ESCAPES: { name: string; layers: TestEntry[][]; refused: RegExp }[] = [
  { name: "absolute path", layers: [[{ name: "/ESCAPED", data: "x" }]], refused: /absolute path/ },
  { name: "dot-dot", layers: [[{ name: "../ESCAPED", data: "x" }]], refused: /contains "\.\."/ },
  {
    name: "dot-dot inside a path",
    layers: [[{ name: "usr/../../ESCAPED", data: "x" }]],
    refused: /contains "\.\."/,
  },
  {
    name: "write through a symlink to the parent",
    layers: [[{ name: "up", type: "symlink", link: ".." }, { name: "up/ESCAPED", data: "x" }]],
    refused: /goes through the symlink "up"/,
  },
  {
    name: "write through an absolute symlink of an earlier layer",
    layers: [[{ name: "out", type: "symlink", link: "/tmp" }], [{
      name: "out/ESCAPED",
      data: "x",
    }]],
    refused: /goes through the symlink "out"/,
  },
  {
    name: "whiteout through a symlink",
    layers: [[{ name: "up", type: "symlink", link: ".." }], [{ name: "up/.wh.victim" }]],
    refused: /goes through the symlink/,
  },
  {
    name: "hard link to outside",
    layers: [[{ name: "ESCAPED", type: "hardlink", link: "../victim" }]],
    refused: /hard link target .* contains "\.\."/,
  },
  {
    name: "hard link to an absolute host file",
    layers: [[{ name: "passwd", type: "hardlink", link: "/etc/passwd" }]],
    refused: /is an absolute path/,
  },
  {
    name: "hard link through a symlink",
    layers: [[{ name: "up", type: "symlink", link: ".." }, {
      name: "ESCAPED",
      type: "hardlink",
      link: "up/victim",
    }]],
    refused: /goes through the symlink/,
  },
  {
    name: "hard link to a symlink",
    layers: [[{ name: "l", type: "symlink", link: "/etc/passwd" }, {
      name: "ESCAPED",
      type: "hardlink",
      link: "l",
    }]],
    refused: /not a file of the image/,
  },
];

for (const escape of ESCAPES) {
  for (const form of ["layout", "archive"]) {
    Deno.test(`OCI ${form}: ${escape.name} is refused`, async () => {
      await withDir(async (dir) => {
        // The root sits two levels down so "../" and "../../" land in directories we watch.
        const box = join(dir, "box");
        mkdirSync(box);
        writeFileSync(join(box, "victim"), "host file\n");
        writeFileSync(join(dir, "victim"), "host file\n");
        writeOciLayout(join(dir, "layout"), escape.layers);
        let source = join(dir, "layout");
        if (form === "archive") {
          writeOciArchive(source, join(dir, "image.tar"));
          source = join(dir, "image.tar");
        }
        const error = await assertRejects(
          () => unpackOciImage(source, join(box, "rootfs"), join(dir, "scratch"), {}),
          LayerEscapeError,
        );
        assert(escape.refused.test(error.message), error.message);
        for (const place of [dir, box, "/tmp", "/"]) {
          assert(!existsSync(join(place, "ESCAPED")), `nothing written to ${place}`);
        }
        assertEquals(readFileSync(join(box, "victim"), "utf8"), "host file\n");
        assertEquals(readFileSync(join(dir, "victim"), "utf8"), "host file\n");
      });
    });
  }
}

Deno.test("an OCI archive whose own entries escape is refused before any layer", async () => {
  await withDir(async (dir) => {
    writeFileSync(join(dir, "image.tar"), writeTar([{ name: "../ESCAPED", data: "x" }]));
    await assertRejects(
      () =>
        unpackOciImage(join(dir, "image.tar"), join(dir, "box/rootfs"), join(dir, "scratch"), {}),
      LayerEscapeError,
    );
    assert(!existsSync(join(dir, "ESCAPED")));
  });
});

Deno.test("a layer whose content does not match its digest is refused", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "layout"), [[{ name: "a", data: "1" }]], "none");
    const manifest = JSON.parse(readFileSync(join(dir, "layout/index.json"), "utf8")).manifests[0];
    const layer = JSON.parse(
      readFileSync(join(dir, "layout/blobs/sha256", manifest.digest.slice(7)), "utf8"),
    ).layers[0];
    const path = join(dir, "layout/blobs/sha256", layer.digest.slice(7));
    writeFileSync(path, writeTar([{ name: "a", data: "2" }]));
    const error = await assertRejects(
      () => unpackOciImage(join(dir, "layout"), join(dir, "rootfs"), join(dir, "scratch"), {}),
      OciImageError,
    );
    assert(/the manifest says sha256:/.test(error.message), error.message);
  });
});

Deno.test("a descriptor digest that is a path is refused", async () => {
  await withDir(async (dir) => {
    mkdirSync(join(dir, "layout"));
    writeFileSync(
      join(dir, "layout/index.json"),
      JSON.stringify({ manifests: [{ digest: "sha256:../../../etc/passwd" }] }),
    );
    const error = await assertRejects(
      () => unpackOciImage(join(dir, "layout"), join(dir, "rootfs"), join(dir, "scratch"), {}),
      OciImageError,
    );
    assert(/is not sha256:<64 hex>/.test(error.message), error.message);
  });
});
