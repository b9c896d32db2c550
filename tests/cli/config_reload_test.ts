/**
 * Live config: `ConfigReloader` (SIGHUP, a file change, errors kept out, the state directory
 * pinned, what the reload line names) and `MessengerChannels` (a channel added, re-keyed or
 * removed is started, restarted or stopped; an unchanged one keeps running).
 */
import { join } from "node:path";
import { assert, assertEquals } from "../assert.ts";
import { type CoopConfig, loadConfig } from "../../src/config/config.ts";
import type { ConfigChanges } from "../../src/config/config_changes.ts";
import { ConfigReloader } from "../../src/cli/config_reload.ts";
import { MessengerChannels } from "../../src/cli/messenger_channels.ts";
import { openStateDb } from "../../src/state/state_db.ts";
import { startFakeBotApi } from "../channels/fixtures/fake_bot_api.ts";

const base = (trust: string, extra = "") =>
  `[agent]\nstate_dir = "state"\n[[users]]\nname = "bob"\ntrust = "${trust}"\nmatch = ["telegram:1"]\n${extra}`;

async function withConfigFile(
  text: string,
  fn: (file: string, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "coop-reload-" });
  const file = join(dir, "coop.toml");
  await Deno.writeTextFile(file, text);
  try {
    await fn(file, dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("reload: SIGHUP applies a valid edit and names what changed", async () => {
  await withConfigFile(base("full"), async (file) => {
    const applied: Array<[CoopConfig, ConfigChanges]> = [];
    const reloader = new ConfigReloader(file, await loadConfig(file), (config, changes) => {
      applied.push([config, changes]);
      return Promise.resolve([]);
    });
    reloader.start();
    try {
      await Deno.writeTextFile(
        file,
        base("familiar", '[[users]]\nname = "dave"\ntrust = "public"\n[sandbox]\nmemory = "1G"\n'),
      );
      Deno.kill(Deno.pid, "SIGHUP");
      const deadline = Date.now() + 10_000;
      while (applied.length === 0 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 20));
      }
      assertEquals(applied.length, 1);
      const [config, changes] = applied[0];
      assertEquals(config.users.map((u) => u.trust), ["familiar", "public"]);
      assertEquals(changes.users, ["bob", "+dave"]);
      assertEquals(changes.sandbox, true);
      assertEquals(reloader.current, config);
    } finally {
      await reloader.stop();
    }
  });
});

Deno.test("reload: an invalid file, or a moved state directory, keeps the running config", async () => {
  await withConfigFile(base("full"), async (file, dir) => {
    await Deno.writeTextFile(join(dir, "Coopfile"), '[base]\nimage = "host"\nunknown_key = 1\n');
    const running = await loadConfig(file);
    let applied = 0;
    const reloader = new ConfigReloader(file, running, () => (applied++, Promise.resolve([])));
    for (
      const text of [
        base("superuser"),
        base("full").replace('state_dir = "state"', 'state_dir = "elsewhere"'),
        "[agent\n",
        // A Coopfile that `coop check` and `coop start` refuse: refused by a reload too.
        base("full", '[sandbox]\nenvironment = "Coopfile"\n'),
      ]
    ) {
      await Deno.writeTextFile(file, text);
      assertEquals(await reloader.reload("test"), "rejected");
    }
    await Deno.writeTextFile(file, base("full"));
    assertEquals(await reloader.reload("test"), "unchanged");
    assertEquals(applied, 0);
    assertEquals(reloader.current, running);
  });
});

Deno.test("reload: saving the file is noticed without a signal", async () => {
  await withConfigFile(base("full"), async (file) => {
    let applied = 0;
    const reloader = new ConfigReloader(file, await loadConfig(file), () => {
      applied++;
      return Promise.resolve([]);
    });
    reloader.start();
    try {
      await Deno.writeTextFile(file, base("inner"));
      const deadline = Date.now() + 10_000;
      while (applied === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      assertEquals(applied, 1);
      assertEquals(reloader.current.users[0].trust, "inner");
    } finally {
      await reloader.stop();
    }
  });
});

Deno.test("messenger channels: added, re-keyed and removed channels start, restart and stop", async () => {
  const api = startFakeBotApi();
  const said: string[] = [];
  await withConfigFile(base("full"), async (file, dir) => {
    const db = openStateDb(join(dir, "state"));
    const telegram = (tokenEnv: string) =>
      `[channels.telegram]\nenabled = true\nbot_token_env = "${tokenEnv}"\napi_base_url = "${api.url}"\n`;
    const channels = new MessengerChannels({
      db,
      handle: () => Promise.resolve({ reply: "ok", session: "s", tools: [] }),
      env: (name) => ({ TOKEN_A: api.token, TOKEN_B: api.token })[name],
      say: (text) => said.push(text),
    });
    const load = async (text: string) => (await Deno.writeTextFile(file, text), loadConfig(file));
    try {
      assertEquals(await channels.apply(await load(base("full"))), []);
      assertEquals(await channels.apply(await load(base("full", telegram("TOKEN_A")))), [
        "telegram started",
      ]);
      await channels.started();
      // Unchanged table (another section changed): nothing happens to it.
      assertEquals(await channels.apply(await load(base("inner", telegram("TOKEN_A")))), []);
      assertEquals(await channels.apply(await load(base("inner", telegram("TOKEN_B")))), [
        "telegram stopped",
        "telegram started",
      ]);
      await channels.started();
      assertEquals(api.calls.get("getMe"), 2);
      assertEquals(await channels.apply(await load(base("inner"))), ["telegram stopped"]);
      // A missing token variable: said so, not started.
      assertEquals(await channels.apply(await load(base("inner", telegram("NOT_SET")))), []);
      assert(said.some((s) => /NOT_SET is not set/.test(s)), said.join("\n"));
    } finally {
      await channels.stop({ cancel: true });
      db.close();
      await api.close();
    }
  });
});
