/** `coop explain` argument handling and its human report (no sandbox needed). */
import { join } from "node:path";
import { assertEquals, assertMatch } from "../assert.ts";
import { runExplain } from "../../src/cli/explain_command.ts";
import { writeBuiltManifest } from "../environments/environment_fixture.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";

const CONFIG = `
[agent]
workspace = "ws"
state_dir = "state"
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default", "telegram:111"]
[[users]]
name = "dave"
trust = "inner"
match = ["telegram:*"]
[[groups]]
name = "family"
match = ["telegram:-100"]
trust = "inner"
`;

async function run(args: string[]): Promise<{ code: number; out: string; probed: number }> {
  const dir = await Deno.makeTempDir({ prefix: "coop-explain-cli-" });
  try {
    await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
    let out = "";
    let probed = 0;
    const code = await runExplain([...args, "--config", join(dir, "coop.toml")], {
      probe: () => {
        probed++;
        return Promise.resolve({ available: false, detail: "fake probe" });
      },
      write: (text) => out += text,
    });
    return { code, out, probed };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("explain: usage mistakes exit 2 with the usage line", async () => {
  for (
    const args of [[], ["--channel", "http"], ["--user", "alice", "--sender", "x"], ["--bogus"]]
  ) {
    const r = await run(args);
    assertEquals(r.code, 2, args.join(" "));
    assertMatch(r.out, /usage: coop explain/);
  }
});

Deno.test("explain: an unknown user name exits 1 naming the configured users", async () => {
  const r = await run(["--user", "zed"]);
  assertEquals(r.code, 1);
  assertMatch(r.out, /nor paired person is named "zed" \(known: alice, dave\)/);
});

Deno.test("explain: the owner in a group (negative id) is sandboxed at the group's ceiling", async () => {
  const r = await run(["--user", "alice", "--channel", "telegram", "--group", "-100"]);
  assertEquals(r.code, 0, r.out);
  assertMatch(r.out, /^telegram:111 → user "alice", group -100 \(route: matched\)/);
  assertMatch(r.out, /Effective trust: inner/);
  assertMatch(r.out, /ceiling +inner — \[\[groups\]\] family/);
  assertMatch(r.out, /Commands \(bash, exec\) run: sandbox \(tool\.bash\.sandboxed\)/);
  assertMatch(r.out, /PATH +\/work\/tools:\/work\/bin:\/work\/\.local\/bin:/);
  assertMatch(r.out, /sandbox +UNAVAILABLE: fake probe/);
  assertEquals(r.probed, 1);
});

Deno.test("explain: the owner in a direct chat runs on the host; no probe", async () => {
  const r = await run(["--user", "alice"]);
  assertEquals(r.code, 0, r.out);
  assertMatch(r.out, /Commands \(bash, exec\) run: host \(tool\.bash\.owner_host\)/);
  assertEquals(r.probed, 0);
});

Deno.test("explain: a user matched only by a wildcard is explained by name, with a note", async () => {
  const r = await run(["--user", "dave", "--json"]);
  assertEquals(r.code, 0, r.out);
  const report = JSON.parse(r.out);
  assertEquals(report.identity.route, "named");
  assertMatch(report.notes[0], /dave has no exact match pattern on channel "telegram"/);
  assertEquals(report.trust.effective, "inner");
});

Deno.test("explain: an unknown sender in an unlisted group gets the default ceiling", async () => {
  const r = await run(["--channel", "signal", "--sender", "+100", "--group", "group:x", "--json"]);
  const report = JSON.parse(r.out);
  assertEquals(report.identity.principal, "public");
  assertEquals(report.trust.ceiling, "familiar");
  assertMatch(report.trust.ceilingFrom, /no \[\[groups\]\] entry matches signal:group:x/);
  assertEquals(report.tools, []);
});

Deno.test("explain: a person with an environment sees its overlay root, or why it cannot run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-explain-env-" });
  try {
    const config = join(dir, "coop.toml");
    await Deno.writeTextFile(
      config,
      CONFIG.replace(
        'state_dir = "state"\n',
        'state_dir = "state"\n[sandbox]\nenvironment = "Coopfile"\n',
      ),
    );
    await Deno.writeTextFile(
      join(dir, "Coopfile"),
      '[base]\nimage = "debian:bookworm"\n[session]\npersist = ["/root/.cache"]\n',
    );
    const explain = async () => {
      let out = "";
      const code = await runExplain(["--user", "dave", "--config", config], {
        probe: () => Promise.resolve({ available: false, detail: "fake probe" }),
        write: (text) => out += text,
      });
      return { code, out };
    };
    const unbuilt = await explain();
    assertEquals(unbuilt.code, 0);
    assertMatch(unbuilt.out, /policy +INVALID: .*coop init/);
    writeBuiltManifest(join(dir, "state"), join(dir, "Coopfile"));
    const built = await explain();
    assertMatch(
      built.out,
      /overlay: \S+\/uppers\/dave\/upper \(their own layer, kept\) over \S+rootfs/,
    );
    assertMatch(built.out, /\/root\/\.cache +rw +\S+\/persist\/dave\/0/);
    assertMatch(built.out, /\n {2}lifetime +a fresh sandbox per command\n/);
    assertEquals(/\/usr +ro +\/usr/.test(built.out), false, "not the plain host /usr root");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test('explain: upper = "session" is shown for a placeholder session, leaving nothing', async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-explain-session-" });
  try {
    const config = join(dir, "coop.toml");
    await Deno.writeTextFile(
      config,
      CONFIG.replace(
        'state_dir = "state"\n',
        'state_dir = "state"\n[sandbox]\nenvironment = "Coopfile"\nlifetime = "session"\n' +
          'idle_timeout = "5m"\n',
      ),
    );
    const coopfile = join(dir, "Coopfile");
    await Deno.writeTextFile(
      coopfile,
      '[base]\nimage = "host"\n[session]\nupper = "session"\n[env]\nGREETING = "hi"\n',
    );
    writeBuiltManifest(join(dir, "state"), coopfile);
    let out = "";
    const code = await runExplain(["--user", "dave", "--config", config], {
      probe: () => Promise.resolve({ available: false, detail: "fake probe" }),
      write: (text) => out += text,
    });
    assertEquals(code, 0, out);
    assertEquals(/INVALID/.test(out), false, out);
    assertMatch(
      out,
      /session +\[session\] upper = "session": .*placeholder session \(\(any-session\)\)/,
    );
    assertMatch(out, /overlay: \S+\/uppers\/dave\/sessions\/\w+\/upper \(the session's own layer/);
    assertMatch(
      out,
      /\n {2}lifetime +one live sandbox per chat session .*ended by \/clear or 300 s unused\n/,
    );
    // The variables the environment sets, by name (an [env] value may be something private).
    assertMatch(out, /\n {2}set +COOP_SESSION, GREETING\n/);
    assertEquals(out.includes('"hi"') || / hi\b/.test(out), false, "values are not printed");
    // The placeholder's layer directory was not left behind.
    const sessions = join(
      environmentPaths(join(dir, "state"), coopfile).root,
      "uppers/dave/sessions",
    );
    assertEquals([...Deno.readDirSync(sessions)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("explain: paired people that cannot be read stop it with the reason, no stack", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-explain-baddb-" });
  try {
    const config = join(dir, "coop.toml");
    await Deno.writeTextFile(config, CONFIG);
    await Deno.mkdir(join(dir, "state"));
    await Deno.writeTextFile(join(dir, "state", "coop.db"), "not a database at all\n".repeat(200));
    let out = "";
    const code = await runExplain(["--channel", "telegram", "--sender", "5", "--config", config], {
      probe: () => Promise.resolve({ available: false, detail: "fake probe" }),
      write: (text) => out += text,
    });
    assertEquals(code, 1, out);
    assertMatch(out, /^error: cannot read paired people from \S+coop\.db: /);
    assertEquals(out.includes("    at "), false, out);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
