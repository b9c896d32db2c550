// Issue 14, item 3: what an environment puts into a user's sandbox policy — the overlay root
// over the built base (or the host), the user's own upper (or the session's), persist binds
// from per-user storage (0700), [env] and COOP_SESSION — and the refusals when it cannot.
import { deepStrictEqual, ok, strictEqual, throws } from "node:assert/strict";
import fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { coopfileHash } from "../../src/config/coopfile_hash.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";
import {
  EnvironmentError,
  environmentMounts,
  sessionUpper,
} from "../../src/environments/environment_mounts.ts";
import { loadEnvironment } from "../../src/environments/environment_state.ts";
import { reachableForSandbox } from "../../src/environments/sandbox_search.ts";
import process from "node:process";
import { writeBuiltManifest } from "./environment_fixture.ts";

function withDir(fn: (dir: string) => void): void {
  const dir = fs.mkdtempSync(join(tmpdir(), "env-mounts-"));
  try {
    fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const COOPFILE = `
[base]
image = "debian:bookworm"
[session]
persist = ["/root/.cache", "/opt/data"]
[env]
LANG = "C.UTF-8"
`;

Deno.test("environment mounts: the user's upper over the built base, persist binds, variables", () => {
  withDir((dir) => {
    const coopfile = join(dir, "Coopfile");
    fs.writeFileSync(coopfile, COOPFILE);
    const state = join(dir, "state");
    const notBuilt = loadEnvironment(state, coopfile);
    const error = throws(
      () => environmentMounts(notBuilt, "bob", undefined, "/etc/coop/coop.toml"),
      (e: unknown) =>
        e instanceof EnvironmentError && e.code === "environment.not_built" &&
        e.message.includes(coopfile) &&
        e.message.includes("coop init --config /etc/coop/coop.toml"),
    );
    void error;
    writeBuiltManifest(state, coopfile);
    const env = loadEnvironment(state, coopfile);
    strictEqual(env.stale, false);
    const paths = environmentPaths(state, coopfile);
    const mounts = environmentMounts(env, "bob", { channel: "http", id: "s1" }, "coop.toml");
    deepStrictEqual(mounts, {
      rootfs: { lower: paths.rootfs, ...paths.upper("bob") },
      persist: [
        { source: paths.persist("bob", 0), target: "/root/.cache" },
        { source: paths.persist("bob", 1), target: "/opt/data" },
      ],
      env: { LANG: "C.UTF-8", COOP_SESSION: "s1" },
    });
    // Coop makes the directories they live in; the library makes them, owned by the sandbox.
    for (const path of [mounts.rootfs.upper, mounts.rootfs.work, paths.persist("bob", 1)]) {
      ok(!fs.existsSync(path), path);
      const mode = fs.statSync(join(path, "..")).mode & 0o777;
      ok(mode === 0o700 || mode === 0o710, `${path}/..: ${mode.toString(8)}`);
    }
    // Carol gets her own upper in the same environment.
    const carol = environmentMounts(env, "carol", undefined, "coop.toml");
    deepStrictEqual(carol.rootfs, { lower: paths.rootfs, ...paths.upper("carol") });
    strictEqual(carol.env.COOP_SESSION, undefined);
    // A name that cannot be a directory never gets one.
    throws(() => environmentMounts(env, "../bob", undefined, "coop.toml"), EnvironmentError);
  });
});

Deno.test("environment mounts: upper = session gives each session its own layer; host lower", () => {
  withDir((dir) => {
    const coopfile = join(dir, "Coopfile");
    fs.writeFileSync(coopfile, '[base]\nimage = "host"\n[session]\nupper = "session"\n');
    const state = join(dir, "state");
    writeBuiltManifest(state, coopfile);
    const env = loadEnvironment(state, coopfile);
    const paths = environmentPaths(state, coopfile);
    const a = environmentMounts(env, "bob", { channel: "http", id: "a" }, "coop.toml");
    const b = environmentMounts(env, "bob", { channel: "http", id: "b" }, "coop.toml");
    strictEqual(a.rootfs.lower, "host");
    const expected = sessionUpper(paths, "bob", { channel: "http", id: "a" });
    strictEqual(a.rootfs.upper, expected.upper);
    ok(a.rootfs.upper !== b.rootfs.upper);
    ok(a.rootfs.upper.startsWith(join(paths.root, "uppers", "bob", "sessions") + "/"));
    throws(
      () => environmentMounts(env, "bob", undefined, "coop.toml"),
      (e: unknown) => e instanceof EnvironmentError && e.code === "environment.no_session",
    );
  });
});

Deno.test("environment state: a changed Coopfile marks the base stale; a broken manifest is unbuilt", () => {
  withDir((dir) => {
    const coopfile = join(dir, "Coopfile");
    fs.writeFileSync(coopfile, '[base]\nimage = "host"\n');
    const state = join(dir, "state");
    writeBuiltManifest(state, coopfile);
    fs.writeFileSync(coopfile, '[base]\nimage = "host"\n[setup]\nrun = ["true"]\n');
    const env = loadEnvironment(state, coopfile);
    ok(env.stale && env.manifest !== null);
    ok(env.manifest.hash !== coopfileHash(env.coopfile));
    fs.writeFileSync(environmentPaths(state, coopfile).manifest, "{not json");
    const broken = loadEnvironment(state, coopfile);
    strictEqual(broken.manifest, null);
    ok(broken.manifestProblem?.includes("not valid JSON"));
    throws(
      () => environmentMounts(broken, "bob", undefined, "coop.toml"),
      (e: unknown) => e instanceof EnvironmentError && e.message.includes("not valid JSON"),
    );
  });
});

Deno.test("sandbox search: as root, the state dir and environment dirs open to the sandbox's gid only", () => {
  withDir((dir) => {
    const state = join(dir, "state");
    fs.mkdirSync(state, { mode: 0o700 });
    const target = join(state, "environments", "e-1", "uppers", "bob");
    if (process.getuid?.() !== 0) {
      reachableForSandbox(state, target);
      strictEqual(fs.statSync(target).mode & 0o777, 0o700, "unprivileged: nothing opened");
      console.log("  (the group change itself needs root: checked in the root run)");
      return;
    }
    reachableForSandbox(state, target, 4242);
    for (
      const path of [state, join(state, "environments"), join(state, "environments/e-1"), target]
    ) {
      const info = fs.statSync(path);
      strictEqual(info.mode & 0o777, 0o710, path);
      strictEqual(info.gid, 4242, path);
      strictEqual(info.uid, 0, path);
    }
    // A directory whose group has permissions of its own is refused, never changed.
    const shared = join(dir, "shared");
    fs.mkdirSync(join(shared, "environments"), { recursive: true, mode: 0o750 });
    fs.chmodSync(shared, 0o750);
    throws(
      () => reachableForSandbox(shared, join(shared, "environments", "x"), 4242),
      (e: unknown) => e instanceof EnvironmentError && e.code === "environment.unreachable",
    );
    strictEqual(fs.statSync(shared).mode & 0o777, 0o750);
  });
});
