/**
 * `coop usage` and `coop memory` on a config whose gateway never ran: they report nothing used and
 * create nothing (no state directory appears); a broken config names its file and key.
 */
import { assertEquals, assertMatch } from "../assert.ts";
import { join } from "node:path";
import { runCommand } from "../fixtures/run_command.ts";
import { coopArgv } from "../e2e/gateway_process.ts";

async function coop(dir: string, ...args: string[]) {
  const [cmd, ...rest] = coopArgv(...args, "--config", join(dir, "coop.toml"));
  return await runCommand(cmd, rest, { env: { NO_COLOR: "1" } });
}

Deno.test("coop usage and coop memory before the gateway ever ran: zeros, and nothing created", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-owner-cli-" });
  try {
    await Deno.writeTextFile(
      join(dir, "coop.toml"),
      `[agent]\nstate_dir = "state"\n[[users]]\nname = "bob"\ntrust = "inner"\n` +
        `[users.budget]\nturns_per_hour = 3\n`,
    );
    const usage = await coop(dir, "usage", "--json");
    assertEquals(usage.code, 0, usage.stderr);
    const report = JSON.parse(usage.stdout);
    assertEquals(report.people, [{
      name: "bob",
      kind: "user",
      exempt: false,
      used: { turns_per_hour: 0, tokens_per_day: 0, sandbox_seconds_per_day: 0 },
      budget: { turns_per_hour: 3 },
      spent: [],
    }]);
    assertEquals(report.windows, {
      turns_per_hour: 3600,
      tokens_per_day: 86400,
      sandbox_seconds_per_day: 86400,
    });
    const human = await coop(dir, "usage");
    assertMatch(
      human.stdout,
      /^person +turns\/hour +tokens\/day +sandbox s\/day\nbob +0\/3 +0 +0\n/,
    );
    const list = await coop(dir, "memory", "list");
    assertEquals([list.code, list.stdout], [0, "no memories\n"]);
    const rm = await coop(dir, "memory", "rm", "1");
    assertEquals(rm.code, 1);
    assertMatch(rm.stderr, /there is no memory #1/);
    let created = true;
    try {
      await Deno.stat(join(dir, "state"));
    } catch {
      created = false;
    }
    assertEquals(created, false, "no state directory was created");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("coop usage: a broken budget names the file and key; a bad argument is a usage error", async () => {
  const dir = await Deno.makeTempDir({ prefix: "coop-owner-cli-" });
  try {
    await Deno.writeTextFile(
      join(dir, "coop.toml"),
      `[[users]]\nname = "bob"\ntrust = "inner"\n[users.budget]\nturns_per_hour = -2\n`,
    );
    const usage = await coop(dir, "usage");
    assertEquals(usage.code, 1);
    assertMatch(usage.stderr, /coop\.toml.*users\[0\]\.budget\.turns_per_hour/);
    const bad = await coop(dir, "memory", "rm", "abc");
    assertEquals(bad.code, 2);
    assertMatch(bad.stderr, /coop memory rm takes one memory id/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
