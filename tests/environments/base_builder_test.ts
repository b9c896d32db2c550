// Issue 14, item 2: building an environment's base — manifest, skip when unchanged, atomic
// replace, a failure that names its step and keeps the previous base, progress, host bases.
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeTree } from "../../src/environments/sandbox_tree.ts";
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { loadCoopfile } from "../../src/config/coopfile_load.ts";
import { coopfileHash } from "../../src/config/coopfile_hash.ts";
import { BaseBuildError, buildBase } from "../../src/environments/base_builder.ts";
import { lineProgress, SILENT_PROGRESS } from "../../src/environments/build_progress.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";
import { EnvironmentError } from "../../src/environments/environment_errors.ts";
import { upperLocker } from "../../src/environments/layer_removal.ts";
import { DEFAULT_SANDBOX_HOST_ID } from "../../src/sandbox/host_ids.ts";
import { exec } from "../../src/sandbox/mod.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { miniLayers, writeOciLayout } from "../fixtures/oci_image.ts";

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "coop-base-"));
  // As a state directory must be for a root invoker: searchable by the sandbox's host uid.
  chmodSync(dir, 0o711);
  try {
    await fn(dir);
  } finally {
    removeTree(dir);
  }
}

/** A Coopfile at `<dir>/Coopfile` with `body`; returns its path. */
function coopfileAt(dir: string, body: string): string {
  const path = join(dir, "Coopfile");
  writeFileSync(path, body);
  return path;
}

function build(dir: string, path: string, force = false, progress = SILENT_PROGRESS) {
  return buildBase({
    stateDir: join(dir, "state"),
    coopfilePath: path,
    coopfile: loadCoopfile({ project: path, global: null }),
    force,
    progress,
  });
}

Deno.test("an OCI base: rootfs, manifest, owned by the id sandbox root maps to, 0700 above", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "image"), miniLayers(dir));
    const path = coopfileAt(dir, `[base]\nimage = "oci:${dir}/image"\n`);
    const result = await build(dir, path);
    const paths = environmentPaths(join(dir, "state"), path);
    assertEquals(result.status, "built");
    assert(existsSync(join(paths.rootfs, "usr/bin/sh")));
    const manifest = JSON.parse(readFileSync(paths.manifest, "utf8"));
    assertEquals(manifest.image, `oci:${dir}/image`);
    assertEquals(manifest.sources, [path]);
    assertEquals(manifest.hash, coopfileHash(loadCoopfile({ project: path, global: null })));
    assert(manifest.sizeBytes > 100_000, `size ${manifest.sizeBytes}`);
    assert(!Number.isNaN(Date.parse(manifest.builtAt)));
    assert(!existsSync(paths.next), "base.next is gone");
    const expected = Deno.uid() === 0 ? DEFAULT_SANDBOX_HOST_ID : Deno.uid();
    for (const file of ["", "usr/bin/sh", "etc/hostname", "bin", "usr/share/doc/coop"]) {
      assertEquals(lstatSync(join(paths.rootfs, file)).uid, expected, `owner of /${file}`);
      assertEquals(lstatSync(join(paths.rootfs, file)).gid, expected, `group of /${file}`);
    }
    // Root invokers: the sandbox's gid may search (only) the way down to the base.
    const mode = Deno.uid() === 0 ? 0o710 : 0o700;
    for (const path of [join(dir, "state"), join(dir, "state/environments"), paths.root]) {
      assertEquals(lstatSync(path).mode & 0o777, mode, path);
      if (Deno.uid() === 0) assertEquals(lstatSync(path).gid, DEFAULT_SANDBOX_HOST_ID, path);
    }
    assertEquals(lstatSync(paths.base).mode & 0o777, 0o700);
    assertEquals(lstatSync(paths.base).uid, expected);
  });
});

Deno.test("init keeps a base built from the same Coopfile hash; rebuild replaces it", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "image"), miniLayers(dir));
    const path = coopfileAt(dir, `[base]\nimage = "oci:${dir}/image"\n`);
    const first = await build(dir, path);
    const again = await build(dir, path);
    assertEquals(again.status, "unchanged");
    assertEquals(again.manifest.builtAt, first.manifest.builtAt);
    const paths = environmentPaths(join(dir, "state"), path);
    const marker = join(paths.rootfs, "marker");
    writeFileSync(marker, "old base");
    const rebuilt = await build(dir, path, true);
    assertEquals(rebuilt.status, "built");
    assert(!existsSync(marker), "the old base was replaced as a whole");
    assertEquals(
      readdirSync(paths.root).sort(),
      ["base", "base.lock"],
      "no base.next, no base.old left",
    );
    // A changed Coopfile (here its env) is rebuilt by init too.
    writeFileSync(path, `[base]\nimage = "oci:${dir}/image"\n[env]\nA = "1"\n`);
    assertEquals((await build(dir, path)).status, "built");
  });
});

Deno.test("a failed build names its step, removes base.next and keeps the previous base", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "image"), miniLayers(dir));
    const path = coopfileAt(dir, `[base]\nimage = "oci:${dir}/image"\n`);
    const good = await build(dir, path);
    const paths = environmentPaths(join(dir, "state"), path);
    writeOciLayout(join(dir, "evil"), [[{ name: "../../ESCAPED", data: "x" }]]);
    writeFileSync(path, `[base]\nimage = "oci:${dir}/evil"\n`);
    const error = await assertRejects(() => build(dir, path, true), BaseBuildError);
    assertEquals(error.step, "unpack");
    assertEquals(error.code, "environment.build");
    assertMatch(
      error.message,
      /failed at step "unpack": entry "\.\.\/\.\.\/ESCAPED" contains "\.\."/,
    );
    assertMatch(error.message, /the previous base is unchanged/);
    assert(!existsSync(paths.next));
    assertEquals(JSON.parse(readFileSync(paths.manifest, "utf8")).builtAt, good.manifest.builtAt);
    assert(existsSync(join(paths.rootfs, "usr/bin/sh")));
    // A missing image fails the same way.
    writeFileSync(path, `[base]\nimage = "oci:${dir}/missing"\n`);
    const missing = await assertRejects(() => build(dir, path, true), BaseBuildError);
    assertMatch(missing.message, /cannot read the image/);
    assert(existsSync(join(paths.rootfs, "usr/bin/sh")));
  });
});

Deno.test("a crash between the two renames is recovered: base.old comes back", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "image"), miniLayers(dir));
    const path = coopfileAt(dir, `[base]\nimage = "oci:${dir}/image"\n`);
    await build(dir, path);
    const paths = environmentPaths(join(dir, "state"), path);
    Deno.renameSync(paths.base, `${paths.base}.old`);
    assertEquals((await build(dir, path)).status, "unchanged");
    assert(existsSync(paths.manifest));
  });
});

Deno.test("progress: a line per step with elapsed time and bytes, then a summary", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "image"), miniLayers(dir));
    const path = coopfileAt(dir, `[base]\nimage = "oci:${dir}/image"\n`);
    const lines: string[] = [];
    await build(dir, path, false, lineProgress("coop init Coopfile", (l) => lines.push(l), 0));
    assertMatch(lines[0], /^coop init Coopfile: \[\d+\.\ds\] unpack: OCI image .* \(0 B so far\)$/);
    assert(lines.some((l) => /unpack: layer 2 of 2/.test(l)), lines.join("\n"));
    assert(
      lines.some((l) => /unpack: working \(\d+(\.\d)? [KMG]?i?B so far\)/.test(l)),
      lines.join("\n"),
    );
    assertMatch(
      lines.at(-1)!,
      /\] built oci:.* for coopfile-[0-9a-f]{12}: \d+(\.\d)? [KMG]iB in \d+\.\ds$/,
    );
  });
});

Deno.test("a host base writes only a manifest; installing into it is refused", async () => {
  await withDir(async (dir) => {
    const path = coopfileAt(dir, `[base]\nimage = "host"\n`);
    const result = await build(dir, path);
    const paths = environmentPaths(join(dir, "state"), path);
    assertEquals(result.manifest.image, "host");
    assertEquals(result.manifest.sizeBytes, 0);
    assert(existsSync(paths.manifest) && !existsSync(paths.rootfs));
    for (
      const [body, step, key] of [
        ['[packages]\ninstall = ["jq"]\n', "packages", "\\[packages\\] install"],
        ['[setup]\nrun = ["true"]\n', "setup", "\\[setup\\] run"],
        ['[agent]\ninstall = ["true"]\n', "agent", "\\[agent\\] install"],
      ]
    ) {
      writeFileSync(path, `[base]\nimage = "host"\n${body}`);
      const error = await assertRejects(() => build(dir, path, true), BaseBuildError);
      assertEquals(error.step, step);
      assertMatch(error.message, new RegExp(`${key} needs a base to install into`));
      assert(existsSync(paths.manifest), "the previous (host) base stays");
    }
  });
});

sandboxTest(
  "setup and agent install run in a build sandbox over the new base, with [env]",
  async () => {
    await withDir(async (dir) => {
      writeOciLayout(join(dir, "image"), miniLayers(dir));
      const path = coopfileAt(
        dir,
        `[base]\nimage = "oci:${dir}/image"\n` +
          `[setup]\nrun = ["mkdir -p /usr/local/app && echo $GREETING > /usr/local/app/hello", "id -u > /usr/local/app/uid"]\n` +
          `[agent]\ninstall = ["touch /etc/agent-installed"]\n[env]\nGREETING = "hi"\n`,
      );
      const lines: string[] = [];
      const result = await build(dir, path, false, lineProgress("t", (l) => lines.push(l)));
      const paths = environmentPaths(join(dir, "state"), path);
      assertEquals(readFileSync(join(paths.rootfs, "usr/local/app/hello"), "utf8"), "hi\n");
      assertEquals(
        readFileSync(join(paths.rootfs, "usr/local/app/uid"), "utf8"),
        "0\n",
        "root inside",
      );
      assert(existsSync(join(paths.rootfs, "etc/agent-installed")));
      const expected = Deno.uid() === 0 ? DEFAULT_SANDBOX_HOST_ID : Deno.uid();
      assertEquals(lstatSync(join(paths.rootfs, "usr/local/app/hello")).uid, expected);
      assertEquals(result.manifest.setup.length, 3);
      assert(lines.some((l) => /setup: \[1\/3\] mkdir -p/.test(l)), lines.join("\n"));
      assert(lines.some((l) => /agent: \[3\/3\] touch/.test(l)), lines.join("\n"));
      // A failing command names its step and output; the base built above stays.
      writeFileSync(
        path,
        `[base]\nimage = "oci:${dir}/image"\n[setup]\nrun = ["echo boom >&2; exit 3"]\n`,
      );
      const error = await assertRejects(() => build(dir, path), BaseBuildError);
      assertEquals(error.step, "setup");
      assertMatch(error.message, /"echo boom >&2; exit 3" exited with 3:\n\s+boom/);
      assert(existsSync(join(paths.rootfs, "usr/local/app/hello")));
    });
  },
);

sandboxTest("a sandbox over the built base sees its files owned by root", async () => {
  await withDir(async (dir) => {
    writeOciLayout(join(dir, "image"), miniLayers(dir));
    const path = coopfileAt(dir, `[base]\nimage = "oci:${dir}/image"\n`);
    await build(dir, path);
    const paths = environmentPaths(join(dir, "state"), path);
    mkdirSync(join(dir, "work"));
    const r = await exec({
      workspace: join(dir, "work"),
      rootfs: { lower: paths.rootfs, upper: join(dir, "u/upper"), work: join(dir, "u/work") },
    }, ["/bin/sh", "-c", "ls -lnd / /usr/bin/sh /etc/hostname /usr/share/doc/coop"]);
    assertEquals(r.stderr, "");
    const owners = r.stdout.trim().split("\n").map((line) =>
      line.split(/\s+/).slice(2, 4).join(":")
    );
    assertEquals(owners, ["0:0", "0:0", "0:0", "0:0"], r.stdout);
  });
});

Deno.test("one build of an environment at a time: a second is refused, naming the first", async () => {
  await withDir(async (dir) => {
    const path = coopfileAt(dir, `[base]\nimage = "host"\n`);
    await build(dir, path);
    const paths = environmentPaths(join(dir, "state"), path);
    // Another build in progress holds the base's lock (a flock: any other open of it conflicts).
    const other = (await upperLocker())(paths.base);
    assert(other, "the lock was free after the first build");
    try {
      const error = await assertRejects(() => build(dir, path, true), EnvironmentError);
      assertEquals(error.code, "environment.build_running");
      assertMatch(error.message, new RegExp(`process ${Deno.pid}\\) is building`));
      assert(existsSync(paths.manifest), "the base is untouched");
    } finally {
      other.release();
    }
    assertEquals((await build(dir, path, true)).status, "built", "free again once it ended");
  });
});
