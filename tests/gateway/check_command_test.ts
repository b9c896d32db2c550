import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { runCheck } from "../../src/cli/check_command.ts";
import type { SandboxProbeResult } from "../../src/gateway/sandbox_probe.ts";

const BASE = `
[agent]
workspace = "ws"
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]
`;

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
];

const availableProbe = (): Promise<SandboxProbeResult> =>
  Promise.resolve({ available: true, detail: "fake probe" });

async function check(
  text: string,
  args: string[] = [],
  probe = availableProbe,
  env: Record<string, string> = { ANTHROPIC_API_KEY: "k" },
): Promise<{ code: number; output: string }> {
  const dir = await Deno.makeTempDir({ prefix: "coop-check-" });
  const file = join(dir, "coop.toml");
  await Deno.writeTextFile(file, text);
  let output = "";
  try {
    const code = await runCheck(["--config", file, ...args], {
      probe,
      write: (t) => (output += t),
      env: (name) => env[name],
    });
    return { code, output: output.replaceAll(file, "coop.toml") };
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

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
    const entry = new URL("../../src/cli/check_command.ts", import.meta.url).pathname;
    const results = await Promise.all(MALFORMED.map(async ([, text], i) => {
      const file = join(dir, `c${i}.toml`);
      await Deno.writeTextFile(file, text);
      return new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "--quiet", entry, "--config", file],
        env: { ANTHROPIC_API_KEY: "k" },
        stdout: "piped",
        stderr: "piped",
      }).output();
    }));
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
    /warning: coop\.toml: providers\[0\]\.api_key_env: environment variable OPENAI_API_KEY is not set/
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
    /warning: coop\.toml: channels\.telegram\.enabled: telegram is enabled, but this version of Coop does not serve it yet/
      .test(telegram.output),
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
