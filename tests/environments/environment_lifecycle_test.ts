// Issue 14, items 2 and 6: coop.toml's `environment` key (per [sandbox], user and cron job),
// `coop check` on the Coopfiles it names, and what reset / clean / status do in the state dir.
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import fs from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";
import {
  cleanEnvironments,
  discardSessionUppers,
  environmentReferences,
  resetUser,
} from "../../src/environments/environment_lifecycle.ts";
import { environmentMounts, sessionUpper } from "../../src/environments/environment_mounts.ts";
import { upperLocker } from "../../src/environments/layer_removal.ts";
import { loadEnvironment } from "../../src/environments/environment_state.ts";
import { environmentsStatus } from "../../src/environments/environment_status.ts";
import { checkEnvironments } from "../../src/environments/check_environments.ts";
import { writeBuiltManifest } from "./environment_fixture.ts";

function withDir(fn: (dir: string) => void): void {
  const dir = fs.mkdtempSync(join(tmpdir(), "env-life-"));
  try {
    fn(dir);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function configIn(dir: string, extra = "") {
  const text = `
[agent]
workspace = "ws"
state_dir = "state"
[sandbox]
environment = "envs/Coopfile"
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
[[users]]
name = "carol"
trust = "inner"
match = ["http:carol"]
[users.sandbox]
environment = "${dir}/other/Coopfile"
[[cron]]
name = "digest"
schedule = "0 3 * * *"
user = "bob"
message = "go"
[cron.sandbox]
environment = "./envs/../envs/Coopfile"
${extra}`;
  return parseConfig(text, join(dir, "coop.toml"), dir);
}

function write(path: string, text: string): string {
  fs.mkdirSync(join(path, ".."), { recursive: true });
  fs.writeFileSync(path, text);
  return path;
}

Deno.test("config: environment resolves against coop.toml's directory, per [sandbox], user, cron", () => {
  withDir((dir) => {
    const config = configIn(dir);
    strictEqual(config.sandbox.defaults.environment, join(dir, "envs/Coopfile"));
    strictEqual(config.users[2].sandbox.environment, join(dir, "other/Coopfile"));
    strictEqual(config.cron[0].sandbox.environment, join(dir, "envs/Coopfile"));
    strictEqual(config.users[1].sandbox.environment, undefined);
    deepStrictEqual(environmentReferences(config).map((r) => [r.who, r.key]), [
      ["[sandbox]", "sandbox.environment"],
      ["user carol", "users[2].sandbox.environment"],
      ["cron job digest", "cron[0].sandbox.environment"],
    ]);
    let error: unknown;
    try {
      parseConfig('[sandbox]\nenvironment = ""\n', join(dir, "coop.toml"), dir);
    } catch (e) {
      error = e;
    }
    ok(String(error).includes("sandbox.environment: must be the path of a Coopfile"));
  });
});

Deno.test("check: a Coopfile's errors name it, its key and who uses it; unbuilt and stale warn", () => {
  withDir((dir) => {
    write(join(dir, "envs/Coopfile"), '[base]\nimage = "debian:bookworm"\n[session]\nupper = 3\n');
    write(join(dir, "other/Coopfile"), '[base]\nimage = "host"\n');
    const config = configIn(dir);
    const out = checkEnvironments(config);
    const invalid = out.find((d) => d.code === "config.coopfile_invalid");
    ok(invalid, JSON.stringify(out));
    strictEqual(invalid.severity, "error");
    strictEqual(invalid.path, "sandbox.environment");
    ok(invalid.message.startsWith(`${join(dir, "envs/Coopfile")}: session.upper: expected one of`));
    ok(invalid.message.includes("used by [sandbox], cron job digest"), invalid.message);
    const unbuilt = out.find((d) => d.code === "config.environment_not_built");
    strictEqual(unbuilt?.severity, "warning");
    strictEqual(unbuilt?.path, "users[2].sandbox.environment");
    ok(unbuilt?.message.includes(`coop init --config ${join(dir, "coop.toml")}`));
    // Built, then changed: a warning to rebuild.
    writeBuiltManifest(config.agent.stateDir, join(dir, "other/Coopfile"));
    write(join(dir, "other/Coopfile"), '[base]\nimage = "host"\n[setup]\nrun = ["true"]\n');
    const stale = checkEnvironments(config).find((d) => d.code === "config.environment_stale");
    ok(stale?.message.includes("coop rebuild"), JSON.stringify(stale));
    // The owner's own environment key does nothing: said so.
    const owner = configIn(dir).users[0];
    ok(owner.trust === "owner");
    const withOwnerEnv = parseConfig(
      '[[users]]\nname = "alice"\ntrust = "owner"\n[users.sandbox]\nenvironment = "other/Coopfile"\n',
      join(dir, "coop.toml"),
      dir,
    );
    const unused = checkEnvironments(withOwnerEnv).find((d) =>
      d.code === "config.environment_unused"
    );
    strictEqual(unused?.path, "users[0].sandbox.environment");
    // A cron job that runs as the owner runs on the host too.
    const cronAsOwner = parseConfig(
      '[[users]]\nname = "alice"\ntrust = "owner"\n[[cron]]\nname = "digest"\n' +
        'schedule = "0 8 * * *"\nuser = "alice"\nmessage = "hi"\n' +
        '[cron.sandbox]\nenvironment = "other/Coopfile"\n',
      join(dir, "coop.toml"),
      dir,
    );
    const cronUnused = checkEnvironments(cronAsOwner).find((d) =>
      d.code === "config.environment_unused"
    );
    strictEqual(cronUnused?.path, "cron[0].sandbox.environment");
  });
});

Deno.test("reset, clean and status: per user, never beyond what they own", async () => {
  const lock = await upperLocker();
  withDir((dir) => {
    write(join(dir, "envs/Coopfile"), '[base]\nimage = "host"\n[session]\npersist = ["/root/x"]\n');
    write(join(dir, "other/Coopfile"), '[base]\nimage = "host"\n[session]\nupper = "session"\n');
    const config = configIn(dir);
    const state = config.agent.stateDir;
    const main = join(dir, "envs/Coopfile");
    const other = join(dir, "other/Coopfile");
    writeBuiltManifest(state, main);
    writeBuiltManifest(state, other);
    const mainEnv = loadEnvironment(state, main);
    const otherEnv = loadEnvironment(state, other);
    for (const user of ["bob", "carol", "dave"]) {
      const m = environmentMounts(mainEnv, user, undefined, "coop.toml");
      // What the sandbox library makes at its start.
      fs.mkdirSync(m.rootfs.upper);
      fs.mkdirSync(m.persist[0].source);
      fs.writeFileSync(join(m.rootfs.upper, "installed"), "x".repeat(10_000));
      fs.writeFileSync(join(m.persist[0].source, "cache"), "c");
    }
    const s1 = environmentMounts(otherEnv, "carol", { channel: "http", id: "s1" }, "coop.toml");
    const s2 = environmentMounts(otherEnv, "carol", { channel: "http", id: "s2" }, "coop.toml");
    fs.mkdirSync(s1.rootfs.upper);
    fs.mkdirSync(s2.rootfs.upper);
    fs.writeFileSync(join(s1.rootfs.upper, "f"), "1");
    fs.writeFileSync(join(s2.rootfs.upper, "f"), "2");
    const mainPaths = environmentPaths(state, main);
    fs.mkdirSync(join(mainPaths.next, "rootfs"), { recursive: true });
    const orphan = join(state, "environments", "gone-0123456789ab");
    fs.mkdirSync(join(orphan, "base"), { recursive: true });

    const status = environmentsStatus(config);
    const mainStatus = status.find((s) => s.coopfile === main);
    ok(mainStatus?.built && mainStatus.image === "host" && mainStatus.sizeBytes === 4096);
    deepStrictEqual(mainStatus.users.map((u) => u.user), ["bob", "carol", "dave"]);
    ok(mainStatus.users[0].upperBytes >= 10_000);
    strictEqual(status.find((s) => s.coopfile === other)?.users[0].sessions, 2);

    // reset bob: his upper only; his persist directory stays without --persist.
    const reset = resetUser(state, "bob", false, lock);
    deepStrictEqual(reset.map((r) => r.path), [join(mainPaths.root, "uppers", "bob")]);
    ok(reset[0].bytes >= 10_000);
    ok(!fs.existsSync(mainPaths.upper("bob").upper));
    ok(fs.existsSync(join(mainPaths.persist("bob", 0), "cache")));
    ok(fs.existsSync(join(mainPaths.upper("carol").upper, "installed")));

    const withPersist = resetUser(state, "bob", true, lock);
    deepStrictEqual(withPersist.map((r) => r.path), [join(mainPaths.root, "persist", "bob")]);

    // /clear of session s1 discards that session's upper only.
    const otherPaths = environmentPaths(state, other);
    const cleared = discardSessionUppers(state, "carol", { channel: "http", id: "s1" }, lock);
    deepStrictEqual(cleared.map((r) => r.path), [
      sessionUpper(otherPaths, "carol", { channel: "http", id: "s1" }).dir,
    ]);
    ok(fs.existsSync(s2.rootfs.upper));

    // clean: the orphan environment, dave (unknown), the unfinished build, and s2 (no session).
    const cleaned = cleanEnvironments(config, {
      knownUsers: new Set(["alice", "bob", "carol"]),
      sessions: [],
      lock,
    });
    deepStrictEqual(
      cleaned.map((r) => r.path).sort(),
      [
        orphan,
        mainPaths.next,
        join(mainPaths.root, "uppers", "dave"),
        join(mainPaths.root, "persist", "dave"),
        sessionUpper(otherPaths, "carol", { channel: "http", id: "s2" }).dir,
      ].sort(),
    );
    ok(fs.existsSync(join(mainPaths.upper("carol").upper, "installed")));
    // A build in progress (it holds the base's lock) is not an unfinished build: kept until it ends.
    fs.mkdirSync(join(mainPaths.next, "rootfs"), { recursive: true });
    const building = lock(mainPaths.base)!;
    const known = { knownUsers: new Set(["alice", "bob", "carol"]), sessions: null, lock };
    try {
      deepStrictEqual(cleanEnvironments(config, known), []);
      ok(fs.existsSync(mainPaths.next));
    } finally {
      building.release();
    }
    deepStrictEqual(cleanEnvironments(config, known).map((r) => r.path), [mainPaths.next]);
    ok(fs.existsSync(mainPaths.manifest));
    // Sessions unknown (the database unreadable): every session upper is kept.
    const s3 = environmentMounts(otherEnv, "carol", { channel: "http", id: "s3" }, "coop.toml");
    fs.mkdirSync(s3.rootfs.upper);
    // (bob, no longer known here, leaves only the lock file his reset kept: it goes now.)
    deepStrictEqual(
      cleanEnvironments(config, { knownUsers: new Set(["carol"]), sessions: null, lock })
        .map((r) => r.path),
      [join(mainPaths.root, "uppers", "bob")],
    );
    ok(fs.existsSync(s3.rootfs.upper));
    // A live session keeps its upper.
    deepStrictEqual(
      cleanEnvironments(config, {
        knownUsers: new Set(["carol"]),
        sessions: [{ channel: "http", id: "s3" }],
        lock,
      }),
      [],
    );
  });
});

Deno.test("check: a Coopfile's IP-literal [network] allow_domains warn as coop.toml's do", () => {
  withDir((dir) => {
    write(
      join(dir, "envs/Coopfile"),
      '[base]\nimage = "host"\n[network]\nmode = "proxy"\n' +
        'allow_domains = ["pypi.org", "127.0.0.1:8787", "10.0.0.5:8080"]\n',
    );
    write(join(dir, "other/Coopfile"), '[base]\nimage = "host"\n');
    const http = '[channels.http]\nenabled = true\nlisten = "127.0.0.1:8787"\n' +
      '[[channels.http.tokens]]\nid = "bob"\ntoken_env = "COOP_TEST_UNSET_TOKEN"\n';
    const out = checkEnvironments(configIn(dir, http));
    const coopfile = join(dir, "envs/Coopfile");
    const never = out.filter((d) => d.code === "config.allow_domains_never_dialed");
    deepStrictEqual(never.map((d) => [d.severity, d.path]), [["warning", "sandbox.environment"]]);
    ok(
      never[0].message.startsWith(
        `${coopfile}: network.allow_domains[1]: "127.0.0.1:8787" (the build of ${coopfile}) ` +
          "is never dialed",
      ),
      never[0].message,
    );
    const consent = out.filter((d) => d.code === "config.allow_domains_private");
    deepStrictEqual(consent.map((d) => d.path), ["sandbox.environment"]);
    ok(consent[0].message.includes('network.allow_domains[2]: "10.0.0.5:8080" lets the build'));
    // Without a network the list is never used: nothing to say about it.
    write(
      coopfile,
      '[base]\nimage = "host"\n[network]\nmode = "none"\nallow_domains = ["127.0.0.1:8787"]\n',
    );
    strictEqual(
      checkEnvironments(configIn(dir, http)).filter((d) => d.code.startsWith("config.allow_"))
        .length,
      0,
    );
  });
});
