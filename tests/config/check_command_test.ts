import { fileURLToPath } from "node:url";
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { runCheck } from "../../src/cli/check_command.ts";
import { availableProbe, checkText } from "../fixtures/check_run.ts";

const BASE = `
[agent]
workspace = "ws"
model = "anthropic/claude-test"
[[providers]]
name = "anthropic"
kind = "anthropic"
api_key_env = "ANTHROPIC_API_KEY"
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]
`;

/** One HTTP token, for bob. */
const HTTP_TOKEN = '[[users]]\nname = "bob"\ntrust = "inner"\nmatch = ["http:bob"]\n' +
  '[[channels.http.tokens]]\nid = "bob"\ntoken_env = "BOB_TOKEN"\n';

/** Bob, sandboxed, and a nightly cron job of his; each timeout row appends its tables. */
const BOB = '[[users]]\nname = "bob"\ntrust = "inner"\n';
const NIGHTLY = '[[cron]]\nname = "nightly"\nschedule = "@daily"\nuser = "bob"\nmessage = "go"\n';

/** Twenty configs with one mistake each, and the key path the single error must name. */
const MALFORMED: ReadonlyArray<[string, string, RegExp]> = [
  ["unknown top-level key", BASE + "colour = 1\n", /colour: unknown key/],
  [
    "a user named like a default principal",
    BASE + '[[users]]\nname = "public"\ntrust = "inner"\n',
    /users\[1\]\.name: "public" names Coop's default principal/,
  ],
  [
    "protected name with a slash",
    BASE + '[sandbox]\nprotected_names = ["a/.git"]\n',
    /sandbox\.protected_names\[0\]: must be a file or directory name \(no \/\), got "a\/\.git"/,
  ],
  [
    "two owners",
    BASE + '[[users]]\nname = "bea"\ntrust = "owner"\n',
    /users: 2 users have trust "owner" \(.*\); only one person may run bash on the host/,
  ],
  [
    "unknown key in agent",
    BASE.replace("[agent]", '[agent]\nmodle = "x"'),
    /agent\.modle: unknown key/,
  ],
  [
    "bad trust name",
    BASE + '[[users]]\nname = "bob"\ntrust = "admin"\n',
    /users\[1\]\.trust: expected one of "owner".*got "admin"/,
  ],
  [
    "trust of wrong type",
    BASE + '[[users]]\nname = "bob"\ntrust = 3\n',
    /users\[1\]\.trust: expected one of .* got 3/,
  ],
  ["missing user name", BASE + '[[users]]\ntrust = "inner"\n', /users\[1\]\.name: is required/],
  [
    "bad user name",
    BASE + '[[users]]\nname = "Bob Smith"\ntrust = "inner"\n',
    /users\[1\]\.name: must be 1-32 characters/,
  ],
  [
    "match not an array",
    BASE + '[[users]]\nname = "bob"\ntrust = "inner"\nmatch = "http:bob"\n',
    /users\[1\]\.match: expected array/,
  ],
  [
    "match without channel",
    BASE + '[[users]]\nname = "bob"\ntrust = "inner"\nmatch = ["bob"]\n',
    /users\[1\]\.match\[0\]: must look like "channel:identifier"/,
  ],
  [
    "match with unknown channel",
    BASE + '[[users]]\nname = "bob"\ntrust = "inner"\nmatch = ["irc:bob"]\n',
    /unknown channel "irc"/,
  ],
  [
    "duplicate match across users",
    BASE + '[[users]]\nname = "bob"\ntrust = "inner"\nmatch = ["terminal:default"]\n',
    /users\[1\]\.match\[0\]: "terminal:default" also matches user "alice"/,
  ],
  ["bad memory size", BASE + '[sandbox]\nmemory = "lots"\n', /sandbox\.memory: expected a size/],
  [
    "bad tmp_size type",
    BASE + "[sandbox]\ntmp_size = true\n",
    /sandbox\.tmp_size: expected a size/,
  ],
  ["pids_limit zero", BASE + "[sandbox]\npids_limit = 0\n", /sandbox\.pids_limit: must be > 0/],
  ["bad timeout", BASE + '[sandbox]\ntimeout = "soon"\n', /sandbox\.timeout: expected a duration/],
  [
    "a sandbox lifetime that is neither command nor session",
    BASE + '[users.sandbox]\nlifetime = "forever"\n',
    /users\[0\]\.sandbox\.lifetime: .*"command".*"session"/,
  ],
  [
    "an idle timeout that is not a duration",
    BASE + '[sandbox]\nidle_timeout = "later"\n',
    /sandbox\.idle_timeout: expected a duration/,
  ],
  [
    "zero timeout: every command would be killed before it ran",
    BASE + '[sandbox]\ntimeout = "0s"\n',
    /sandbox\.timeout: must be from 1ms to 2147483647ms \(.*\), got "0s"/,
  ],
  [
    "a timeout past the timer's 2^31 ms ceiling (it would fire after about 1 ms)",
    BASE + '[sandbox]\nmax_timeout = "600h"\n',
    /sandbox\.max_timeout: must be from 1ms to 2147483647ms \(.*24\.8 days\), got "600h"/,
  ],
  [
    "a user's timeout as a bare number of seconds past the ceiling",
    BASE + "[users.sandbox]\ntimeout = 2147484\n",
    /users\[0\]\.sandbox\.timeout: must be from 1ms to 2147483647ms .*got 2147484/,
  ],
  [
    "[sandbox] timeout above its max_timeout",
    BASE + '[sandbox]\ntimeout = "20m"\nmax_timeout = "10m"\n',
    /sandbox\.timeout: \[sandbox\] timeout \(20m\) is above max_timeout \(10m\); a bash call/,
  ],
  [
    "a user's max_timeout below [sandbox] timeout",
    BASE + '[sandbox]\ntimeout = "5m"\n' + BOB + '[users.sandbox]\nmax_timeout = "1m"\n',
    /users\[1\]\.sandbox\.max_timeout: \[\[users\]\] name = "bob" → \[users\.sandbox\] max_timeout \(1m\) is below timeout \(5m, from \[sandbox\]\)/,
  ],
  [
    "a cron job's timeout above [sandbox] max_timeout",
    BASE + '[sandbox]\nmax_timeout = "10m"\n' + BOB + NIGHTLY + '[cron.sandbox]\ntimeout = "20m"\n',
    /cron\[0\]\.sandbox\.timeout: \[\[cron\]\] name = "nightly" → \[cron\.sandbox\] timeout \(20m\) is above max_timeout \(10m, from \[sandbox\]\)/,
  ],
  [
    "a cron job's max_timeout below its user's timeout",
    BASE + BOB + '[users.sandbox]\ntimeout = "5m"\n' + NIGHTLY +
    '[cron.sandbox]\nmax_timeout = "1m"\n',
    /cron\[0\]\.sandbox\.max_timeout: \[\[cron\]\] name = "nightly" → \[cron\.sandbox\] max_timeout \(1m\) is below timeout \(5m, from \[\[users\]\] name = "bob" → \[users\.sandbox\]\)/,
  ],
  [
    "a cron job's max_timeout below Coop's default timeout",
    BASE + BOB + NIGHTLY + '[cron.sandbox]\nmax_timeout = "1m"\n',
    /cron\[0\]\.sandbox\.max_timeout: .* max_timeout \(1m\) is below timeout \(2m, Coop's default\)/,
  ],
  [
    "an owner's cron job whose timeout is above max_timeout (on the host the timeouts apply)",
    BASE + '[[cron]]\nname = "n"\nschedule = "@daily"\nuser = "alice"\nmessage = "hi"\n' +
    '[cron.sandbox]\ntimeout = "11m"\n',
    /cron\[0\]\.sandbox\.timeout: \[\[cron\]\] name = "n" → \[cron\.sandbox\] timeout \(11m\) is above max_timeout \(10m, Coop's default\)/,
  ],
  [
    "memory too small to start a shell",
    BASE + '[sandbox]\nmemory = "4M"\n',
    /sandbox\.memory: must be from 16M to 1024T \(less cannot start a shell\), got "4M"/,
  ],
  [
    "tmp_size 0 (tmpfs would read it as no limit)",
    BASE + '[sandbox]\ntmp_size = "0"\n',
    /sandbox\.tmp_size: must be from 1M to 64G \(0 would mean no limit at all\), got "0"/,
  ],
  [
    "a cron job's tmp_size too small",
    BASE +
    '[[cron]]\nname = "n"\nschedule = "@daily"\nuser = "alice"\nmessage = "hi"\n[cron.sandbox]\ntmp_size = "64k"\n',
    /cron\[0\]\.sandbox\.tmp_size: must be from 1M to 64G/,
  ],
  [
    "agent.model not among its provider's models",
    BASE.replace(
      'api_key_env = "ANTHROPIC_API_KEY"',
      'api_key_env = "ANTHROPIC_API_KEY"\nmodels = ["claude-other"]',
    ),
    /agent\.model: "claude-test" is not one of the models provider "anthropic" allows \(providers\[0\]\.models: "claude-other"\)/,
  ],
  [
    "bad network mode",
    BASE + '[sandbox]\nnetwork = "wifi"\n',
    /sandbox\.network: expected one of "none", "host", "proxy"/,
  ],
  [
    "bad cron schedule",
    BASE + '[[cron]]\nname = "n"\nschedule = "every day"\nuser = "alice"\nmessage = "hi"\n',
    /cron\[0\]\.schedule: invalid cron schedule/,
  ],
  [
    "unknown key in user sandbox",
    BASE + "[users.sandbox]\nswap = 1\n",
    /users\[0\]\.sandbox\.swap: unknown key/,
  ],
  [
    "secret passed into the sandbox",
    BASE +
    '[[providers]]\nname = "a"\nkind = "anthropic"\napi_key_env = "ANTHROPIC_API_KEY"\n[sandbox]\nenv_passthrough = ["ANTHROPIC_API_KEY"]\n',
    /sandbox\.env_passthrough\[0\]: ANTHROPIC_API_KEY is a secret/,
  ],
  [
    "wildcard owner",
    BASE.replace('"terminal:default"', '"http:*"'),
    /users\[0\]\.match\[0\]: "http:\*" would give every sender/,
  ],
  ["TOML syntax error", BASE + "[[users]\n", /line \d+, column \d+: TOML syntax error/],
  [
    "the state directory is a child named ..cache of a sandboxed user's workspace",
    BASE.replace("[agent]", '[agent]\nstate_dir = "ws/bob/..cache"') +
    '[[users]]\nname = "bob"\ntrust = "inner"\n',
    /agent\.state_dir: .*\/ws\/bob\/\.\.cache overlaps the sandbox-visible directory .*\/ws\/bob/,
  ],
];

const check = checkText;

Deno.test("the base config is valid", async () => {
  const { code, output } = await check(BASE);
  strictEqual(code, 0, output);
  ok(output.includes("ok (0 warnings)"));
});

for (const [label, text, expected] of MALFORMED) {
  Deno.test(`malformed config: ${label} → exactly one precise error, exit 1`, async () => {
    const { code, output } = await check(text);
    strictEqual(code, 1);
    const errors = output.split("\n").filter((l) => l.startsWith("error: "));
    strictEqual(errors.length, 1, output);
    ok(errors[0].startsWith("error: coop.toml: "), errors[0]);
    ok(expected.test(errors[0]), `${errors[0]} !~ ${expected}`);
    ok(!/\n\s+at /.test(output), "no stack trace");
  });
}

Deno.test("every malformed config (at least twenty) through a subprocess: exit 1, one message, no stack trace", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-check-sub-" });
  try {
    const entry = fileURLToPath(new URL("../../src/cli/check_command.ts", import.meta.url));
    const run = async (i: number) => {
      const file = join(dir, `c${i}.toml`);
      await Deno.writeTextFile(file, MALFORMED[i][1]);
      return new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "--quiet", entry, "--config", file],
        env: { ANTHROPIC_API_KEY: "k" },
        stdout: "piped",
        stderr: "piped",
      }).output();
    };
    // A few at a time: dozens of runtimes at once on a small machine contend for Deno's cache
    // databases, and the runtime then warns on stderr ("database is locked"), which this test
    // must see empty; they also take gigabytes of memory together.
    const results: Deno.CommandOutput[] = [];
    for (let next = 0; next < MALFORMED.length; next += 4) {
      const batch = MALFORMED.slice(next, next + 4).map((_, j) => run(next + j));
      results.push(...await Promise.all(batch));
    }
    ok(results.length >= 20, `${results.length} cases`);
    results.forEach((r, i) => {
      const out = new TextDecoder().decode(r.stdout);
      const err = new TextDecoder().decode(r.stderr);
      strictEqual(r.code, 1, `${MALFORMED[i][0]}: ${out}${err}`);
      strictEqual(out.split("\n").filter((l) => l.startsWith("error: ")).length, 1, out);
      ok(MALFORMED[i][2].test(out), `${MALFORMED[i][0]}: ${out}`);
      strictEqual(err, "", `${MALFORMED[i][0]} wrote to stderr`);
      ok(!/^\s+at /m.test(out));
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("warnings: sandbox on without owner, owner cron overrides, missing key", async () => {
  const noOwner = await check('[[users]]\nname = "bob"\ntrust = "inner"\n');
  ok(
    /warning: coop\.toml: users: the sandbox is enabled but no user has trust "owner"/.test(
      noOwner.output,
    ),
  );
  const cron = await check(
    BASE + '[[cron]]\nname = "n"\nschedule = "0 9 * * 1-5"\nuser = "zed"\nmessage = "hi"\n',
  );
  strictEqual(cron.code, 1);
  ok(/error: coop\.toml: cron\[0\]\.user: no user named "zed"/.test(cron.output));
  const ownerJob = await check(
    BASE + '[[cron]]\nname = "n"\nschedule = "0 9 * * *"\nuser = "alice"\nmessage = "hi"\n' +
      '[cron.sandbox]\nmemory = "64M"\n',
  );
  strictEqual(ownerJob.code, 0);
  ok(/warning: coop\.toml: cron\[0\]\.sandbox: "alice" is the owner/.test(ownerJob.output));
  const job = '[[cron]]\nname = "n"\nuser = "alice"\nmessage = "hi"\n';
  const never = await check(BASE + job + 'schedule = "0 0 31 2 *"\n');
  strictEqual(never.code, 0);
  ok(/warning: coop\.toml: cron\[0\]\.schedule: "0 0 31 2 \*" never fires/.test(never.output));
  const plain = await check(
    BASE + job + 'schedule = "0 9 * * *"\nreply_to = "http://10.0.0.5/h"\n',
  );
  ok(
    /warning: coop\.toml: cron\[0\]\.reply_to: replies would travel unencrypted/.test(plain.output),
  );
  const loopback = await check(
    BASE + job + 'schedule = "0 9 * * *"\nreply_to = "http://127.0.0.1:9/h"\n',
  );
  ok(!/reply_to/.test(loopback.output), "loopback http is fine");
  const key = await check(
    BASE + '[[providers]]\nname = "a"\nkind = "openai"\napi_key_env = "OPENAI_API_KEY"\n',
  );
  ok(
    /warning: coop\.toml: providers\[1\]\.api_key_env: environment variable OPENAI_API_KEY is not set/
      .test(key.output),
  );
  const dup = await check(
    BASE.replace('"terminal:default"]', '"terminal:default", "terminal:default"]'),
  );
  strictEqual(dup.code, 0);
  ok(
    /warning: coop\.toml: users\[0\]\.match\[1\]: "terminal:default" is listed twice/.test(
      dup.output,
    ),
  );
  const telegram = await check(
    BASE + '[channels.telegram]\nenabled = true\ntoken_env = "TG_TOKEN"\n',
  );
  strictEqual(telegram.code, 0);
  ok(
    /warning: coop\.toml: channels\.telegram\.token_env: token_env is the older spelling of bot_token_env; rename it/
      .test(telegram.output),
    telegram.output,
  );
});

Deno.test("an unavailable sandbox is an error that carries the probe's reason", async () => {
  const probe = () =>
    Promise.resolve({ available: false, detail: "clone: EPERM — AppArmor blocks userns" });
  const { code, output } = await check(BASE, [], probe);
  strictEqual(code, 1);
  ok(output.includes("sandbox: UNAVAILABLE — clone: EPERM — AppArmor blocks userns"));
  const off = await check(BASE + "[sandbox]\nenabled = false\n", [], probe);
  strictEqual(off.code, 0, "a disabled sandbox is not probed");
});

Deno.test("--json prints one parseable report", async () => {
  const { code, output } = await check(BASE + '[sandbox]\nmemory = "2G"\n', ["--json"]);
  strictEqual(code, 0);
  const report = JSON.parse(output);
  strictEqual(report.ok, true);
  deepStrictEqual(report.errors, []);
  deepStrictEqual(report.warnings.map((w: { code: string }) => w.code), []);
  deepStrictEqual(report.sandbox, { available: true, detail: "fake probe" });
});

Deno.test("a missing config file is one error, and bad arguments exit 2", async () => {
  let output = "";
  const deps = { probe: availableProbe, write: (t: string) => (output += t), env: () => undefined };
  strictEqual(await runCheck(["--config", "/nonexistent/coop.toml"], deps), 1);
  ok(output.includes("error: /nonexistent/coop.toml: (file): cannot read config: file not found"));
  strictEqual(await runCheck(["--bogus"], deps), 2);
});

Deno.test("arguments are parsed by parseArgs; each mistake is one line, the usage, exit 2", async () => {
  const table: Array<[string[], number, RegExp]> = [
    [["--bogus"], 2, /^error: unknown option "--bogus"\nusage: coop check/],
    [["-x"], 2, /^error: unknown option "-x"\n/],
    [["--config"], 2, /^error: --config needs a file\n/],
    [["--config="], 2, /^error: --config needs a file\n/],
    [["--config", "--json"], 2, /^error: --config needs a file\n/],
    [["--json=yes"], 2, /^error: --json takes no value\n/],
    [
      ["coop.toml"],
      2,
      /^error: unexpected argument "coop.toml" \(a config file goes after --config\)/,
    ],
    [["--help"], 0, /^usage: coop check \[--config FILE\] \[--json\]\n$/],
    [["-h"], 0, /^usage: coop check/],
  ];
  for (const [args, code, expected] of table) {
    let output = "";
    const deps = {
      probe: availableProbe,
      write: (t: string) => (output += t),
      env: () => undefined,
    };
    strictEqual(await runCheck(args, deps), code, args.join(" "));
    ok(expected.test(output), `${args.join(" ")}: ${output}`);
  }
  // The same parser reads what a valid command line sets.
  const { code, output } = await check(BASE, ["--json"]);
  strictEqual(code, 0);
  strictEqual(JSON.parse(output).ok, true);
});

/** The warning (code and key path) each config must produce, and the message it names. */
const WARNINGS: ReadonlyArray<[string, string, string, RegExp]> = [
  [
    "no model configured",
    BASE.replace('model = "anthropic/claude-test"\n', ""),
    "agent.model",
    /no model is configured: every message gets an error/,
  ],
  [
    "HTTP enabled with no tokens",
    BASE + "[channels.http]\nenabled = true\n",
    "channels.http.tokens",
    /HTTP is enabled but lists no \[\[channels\.http\.tokens\]\]: every request is refused/,
  ],
  [
    "HTTP on every interface",
    BASE + HTTP_TOKEN + '[channels.http]\nenabled = true\nlisten = "0.0.0.0:8787"\n',
    "channels.http.listen",
    /"0\.0\.0\.0:8787" accepts connections from other machines.*listen on 127\.0\.0\.1/,
  ],
  [
    "HTTP on every IPv6 interface",
    BASE + HTTP_TOKEN + '[channels.http]\nenabled = true\nlisten = "[::]:8787"\n',
    "channels.http.listen",
    /"\[::\]:8787" accepts connections from other machines/,
  ],
  [
    "HTTP on a LAN address",
    BASE + HTTP_TOKEN + '[channels.http]\nenabled = true\nlisten = "192.168.1.5:80"\n',
    "channels.http.listen",
    /accepts connections from other machines/,
  ],
  [
    'workspace = "/"',
    BASE.replace('workspace = "ws"', 'workspace = "/"'),
    "agent.workspace",
    /is "\/": the owner's file tools reach the whole file system/,
  ],
  [
    "an HTTP section with tokens, left disabled",
    BASE + "[channels.http]\n" + HTTP_TOKEN.replace("[[", "[[").trim() + "\n",
    "channels.http.enabled",
    /\[channels\.http\] sets tokens but the channel is not enabled \(enabled defaults to false\)/,
  ],
  [
    "an HTTP section with a listen address, left disabled",
    BASE + '[channels.http]\nlisten = "127.0.0.1:9000"\n',
    "channels.http.enabled",
    /\[channels\.http\] sets listen but the channel is not enabled/,
  ],
  [
    "a terminal section naming its user, disabled",
    BASE + '[channels.terminal]\nenabled = false\nuser = "alice"\n',
    "channels.terminal.enabled",
    /\[channels\.terminal\] sets user but the channel is not enabled; set enabled = true/,
  ],
  [
    "a telegram section left disabled",
    BASE + '[channels.telegram]\nbot_token_env = "TG_TOKEN"\n',
    "channels.telegram.enabled",
    /\[channels\.telegram\] sets bot_token_env but the channel is not enabled/,
  ],
];

for (const [label, text, path, expected] of WARNINGS) {
  Deno.test(`warning: ${label} → that one warning on ${path}, exit 0`, async () => {
    const { code, output } = await check(text, [], availableProbe, {
      ANTHROPIC_API_KEY: "k",
      BOB_TOKEN: "t",
      TG_TOKEN: "t",
    });
    strictEqual(code, 0, output);
    const warnings = output.split("\n").filter((l) => l.startsWith("warning: "));
    strictEqual(warnings.length, 1, output);
    ok(warnings[0].startsWith(`warning: coop.toml: ${path}: `), warnings[0]);
    ok(expected.test(warnings[0]), `${warnings[0]} !~ ${expected}`);
  });
}

Deno.test("no warning for loopback listeners or a channel switched off and nothing else", async () => {
  const quiet = [
    ...["127.0.0.1:8787", "127.0.0.2:1", "localhost:80", "[::1]:8787"].map((listen) =>
      BASE + HTTP_TOKEN + `[channels.http]\nenabled = true\nlisten = "${listen}"\n`
    ),
    BASE + "[channels.http]\nenabled = false\n",
    BASE + "[channels.terminal]\nenabled = false\n",
    BASE + '[channels.terminal]\nuser = "alice"\n',
  ];
  for (const text of quiet) {
    const { code, output } = await check(text, [], availableProbe, {
      ANTHROPIC_API_KEY: "k",
      BOB_TOKEN: "t",
    });
    strictEqual(code, 0, output);
    ok(output.includes("ok (0 warnings)"), output);
  }
});

Deno.test("a provider base_url that is not http(s) is an error naming the key", async () => {
  for (const url of ["ftp://models.example/v1", "file:///run/llm.sock", "ws://127.0.0.1:9/v1"]) {
    const text = BASE +
      `[[providers]]\nname = "local"\nkind = "openai_compatible"\nbase_url = "${url}"\n`;
    const { code, output } = await check(text);
    strictEqual(code, 1, output);
    const errors = output.split("\n").filter((l) => l.startsWith("error: "));
    deepStrictEqual(errors, [
      `error: coop.toml: providers[1].base_url: must be an http:// or https:// URL (the provider ` +
      `is called over HTTP), got "${url}"`,
    ]);
  }
  const https = BASE +
    '[[providers]]\nname = "local"\nkind = "openai_compatible"\nbase_url = "http://127.0.0.1:8080/v1"\n';
  strictEqual((await check(https)).code, 0);
});

Deno.test("F23: auto-run files in a non-owner's workspace are listed, the owner's are not", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-check-ws-" }));
  try {
    const file = join(dir, "coop.toml");
    await Deno.writeTextFile(file, BASE + '[[users]]\nname = "bob"\ntrust = "inner"\n');
    const git = join(dir, "ws", "bob", "repo", ".git");
    for (const sub of ["hooks", "objects", "refs"]) {
      await Deno.mkdir(join(git, sub), { recursive: true });
    }
    await Deno.writeTextFile(join(git, "HEAD"), "ref: refs/heads/main\n");
    await Deno.writeTextFile(join(git, "hooks", "pre-push"), "x", { mode: 0o755 });
    await Deno.writeTextFile(join(dir, "ws", ".envrc"), "the owner's own");
    let output = "";
    const code = await runCheck(["--config", file], {
      probe: availableProbe,
      write: (t) => (output += t),
      env: () => "k",
    });
    strictEqual(code, 0, output);
    const hook = join(dir, "ws", "bob", "repo", ".git", "hooks", "pre-push");
    ok(output.includes(`warning: ${hook}: git hook "pre-push" — in a sandbox's workspace`), output);
    ok(!output.includes(".envrc"), "the owner's workspace root is the owner's");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a workspace other local users can enter is a warning naming the directory", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-check-ws-" }));
  try {
    const file = join(dir, "coop.toml");
    await Deno.writeTextFile(file, BASE + '[[users]]\nname = "bob"\ntrust = "inner"\n');
    await Deno.chmod(dir, 0o755); // the config's directory, above the workspace, lets others in
    const ws = join(dir, "ws");
    await Deno.mkdir(join(ws, "bob"), { recursive: true });
    await Deno.chmod(ws, 0o755);
    await Deno.chmod(join(ws, "bob"), 0o700);
    const run = async (args: string[] = []) => {
      let output = "";
      const code = await runCheck(["--config", file, ...args], {
        probe: availableProbe,
        write: (t) => (output += t),
        env: () => "k",
      });
      return { code, output };
    };
    const open = await run();
    strictEqual(open.code, 0, "a warning, not an error");
    ok(
      open.output.includes(
        `warning: ${file}: agent.workspace: ${ws} (mode 0755) lets other local users in`,
      ),
      open.output,
    );
    ok(open.output.includes(`run chmod 700 ${ws}`));
    ok(!open.output.includes(`${join(ws, "bob")} (mode`), "bob's own directory is closed");
    const json = JSON.parse((await run(["--json"])).output);
    deepStrictEqual(
      json.warnings.map((w: { code: string }) => w.code),
      ["config.workspace.open"],
    );
    await Deno.chmod(ws, 0o700);
    const closed = await run();
    ok(closed.output.includes("ok (0 warnings)"), closed.output);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
