// Issue 14, item 6: `coop sandbox reset` and `coop sandbox clean` from the command line — usage
// mistakes exit 2 without touching anything, a name that is not a user name is refused (it
// would be a path), and each deletion is printed with the space freed (text and --json).
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { runCommand } from "../fixtures/run_command.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";
import { writeBuiltManifest } from "../environments/environment_fixture.ts";
import { cgroupHost } from "../../src/sandbox/cgroup_host.ts";
import { cString, loadTrampoline } from "../../src/sandbox/ffi.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

function coop(...args: string[]) {
  return runCommand(Deno.execPath(), ["run", "--allow-all", "--no-prompt", MAIN, ...args], {
    env: { NO_COLOR: "1" },
  });
}

Deno.test("coop sandbox reset/clean: usage, refusals, deletions printed with their size", async () => {
  const dir = fs.mkdtempSync(join(tmpdir(), "reset-cli-"));
  try {
    const config = join(dir, "coop.toml");
    fs.writeFileSync(
      config,
      '[agent]\nstate_dir = "state"\n[sandbox]\nenvironment = "Coopfile"\n' +
        '[[users]]\nname = "bob"\ntrust = "inner"\n',
    );
    fs.writeFileSync(join(dir, "Coopfile"), '[base]\nimage = "host"\n');
    const state = join(dir, "state");
    writeBuiltManifest(state, join(dir, "Coopfile"));
    const paths = environmentPaths(state, join(dir, "Coopfile"));
    const bob = paths.upper("bob");
    fs.mkdirSync(join(bob.upper, "usr/local/bin"), { recursive: true });
    fs.writeFileSync(join(bob.upper, "usr/local/bin/tool"), "x".repeat(20_000));
    fs.mkdirSync(paths.persist("bob", 0), { recursive: true });
    const gone = paths.upper("gone");
    fs.mkdirSync(gone.upper, { recursive: true });

    const noUser = await coop("sandbox", "reset", "--config", config);
    strictEqual(noUser.code, 2, noUser.stderr);
    ok(noUser.stderr.includes("sandbox reset needs --user NAME"), noUser.stderr);
    const badName = await coop("sandbox", "reset", "--user", "../bob", "--config", config);
    strictEqual(badName.code, 2);
    ok(fs.existsSync(join(bob.upper, "usr/local/bin/tool")), "nothing was touched");
    const unknown = await coop("sandbox", "clean", "--all", "--config", config);
    strictEqual(unknown.code, 2);

    const reset = await coop("sandbox", "reset", "--user", "bob", "--config", config);
    strictEqual(reset.code, 0, reset.stderr);
    ok(
      new RegExp(
        `^removed upper of bob in ${paths.id}: ${
          join(paths.root, "uppers/bob")
        } \\(\\d+(\\.\\d)? KiB\\)\\nfreed \\d`,
      )
        .test(reset.stdout),
      reset.stdout,
    );
    ok(!fs.existsSync(bob.upper) && fs.existsSync(paths.persist("bob", 0)));
    const again = await coop("sandbox", "reset", "--user", "bob", "--config", config);
    strictEqual(again.stdout, "nothing to remove\n");

    const clean = await coop("sandbox", "clean", "--config", config, "--json");
    strictEqual(clean.code, 0, clean.stderr);
    const report = JSON.parse(clean.stdout);
    deepStrictEqual(report.removed.map((r: { path: string }) => r.path), [
      join(paths.root, "uppers/gone"),
    ]);
    ok(typeof report.freedBytes === "number");
    ok(fs.existsSync(paths.manifest), "the referenced base stays");
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

// A `coop run` or `coop start` killed outright cannot remove its sandboxes' cgroups; `coop sandbox
// clean` sweeps them as `coop start` does (src/sandbox/cgroup_sweep.ts). Only root makes sandbox
// cgroups on this machine: an unprivileged invoker gets the rlimit path and has none to leave.
const cgroupParents = (() => {
  const host = cgroupHost();
  return [...new Set([...Object.values(host.v1.dirs), ...(host.v2 ? [host.v2.dir] : [])])];
})();
const sweepSkip = Deno.uid() !== 0
  ? `uid ${Deno.uid()} gets the rlimit path: no sandbox cgroup to leave`
  : cgroupParents.length === 0
  ? "no cgroup hierarchy this process may make sandbox cgroups in"
  : null;
if (sweepSkip) console.log(`coop sandbox clean's cgroup sweep: skipped: ${sweepSkip}`);

Deno.test({
  name: "coop sandbox clean: removes the sandbox cgroups a process killed outright left",
  ignore: sweepSkip !== null,
  async fn() {
    const dir = fs.mkdtempSync(join(tmpdir(), "clean-cgroups-"));
    const gone = new Deno.Command("true").spawn();
    await gone.status;
    const left = cgroupParents.map((parent) => `${parent}/coop-${gone.pid}-cleantest-1`);
    try {
      const config = join(dir, "coop.toml");
      fs.writeFileSync(config, '[agent]\nstate_dir = "state"\n');
      for (const path of left) fs.mkdirSync(path);
      const clean = await coop("sandbox", "clean", "--config", config, "--json");
      strictEqual(clean.code, 0, clean.stderr);
      const report = JSON.parse(clean.stdout);
      deepStrictEqual(report.removed, [], "no environment to clean");
      for (const path of left) {
        ok(report.cgroups.removed.includes(path), `${path} in ${clean.stdout}`);
        ok(!fs.existsSync(path), `${path} removed`);
      }
      const text = await coop("sandbox", "clean", "--config", config);
      strictEqual(text.code, 0, text.stderr);
      ok(!text.stdout.includes("cleantest"), "nothing of the test's left to sweep");
    } finally {
      for (const path of left) {
        try {
          fs.rmdirSync(path); // a cgroup: rmdir, never a recursive delete
        } catch { /* removed by the sweep */ }
      }
      fs.rmSync(dir, { recursive: true, force: true });
    }
  },
});

// The socket directory of a policy proxy whose process was killed outright (src/sandbox/proxy/
// socket_dir.ts): `coop sandbox clean` sweeps it as `coop start` does; one whose lock is held (a
// live proxy's) stays. Any uid: every invoker's proxies make one.
Deno.test("coop sandbox clean: removes a dead proxy's socket directory, keeps a live one's", async () => {
  const dir = fs.mkdtempSync(join(tmpdir(), "clean-proxy-dirs-"));
  const lib = await loadTrampoline();
  const proxyDir = (name: string) => {
    const path = join(dir, name);
    fs.mkdirSync(path, { mode: 0o700 });
    fs.writeFileSync(join(path, "owner.lock"), "1\n");
    // A socket file as a proxy's listener leaves it.
    const listener = Deno.listen({ transport: "unix", path: join(path, "listening") });
    fs.linkSync(join(path, "listening"), join(path, "proxy.sock"));
    listener.close();
    return path;
  };
  const dead = proxyDir("coop-proxy-dead01");
  const live = proxyDir("coop-proxy-live01");
  const holder = new TextEncoder().encode("live\n");
  const fd = lib.coop_lock_file(
    cString(join(live, "owner.lock")),
    holder,
    BigInt(holder.length),
    new Int32Array(1),
  );
  ok(fd >= 0, `lock: ${fd}`);
  try {
    const config = join(dir, "coop.toml");
    fs.writeFileSync(config, '[agent]\nstate_dir = "state"\n');
    const clean = await runCommand(
      Deno.execPath(),
      ["run", "--allow-all", "--no-prompt", MAIN, "sandbox", "clean", "--config", config, "--json"],
      { env: { NO_COLOR: "1", TMPDIR: dir } },
    );
    strictEqual(clean.code, 0, clean.stderr);
    deepStrictEqual(JSON.parse(clean.stdout).proxyDirs.removed, [dead]);
    ok(!fs.existsSync(dead), "the dead proxy's directory is gone");
    ok(fs.existsSync(join(live, "proxy.sock")), "the live proxy's directory stays");
  } finally {
    lib.coop_close(fd);
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
