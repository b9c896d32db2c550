/** `[channels.telegram]` and `[channels.signal]`: keys, defaults, the older spelling, checks. */
import { assertEquals, assertMatch, assertThrows } from "../assert.ts";
import { parseConfig } from "../../src/config/config.ts";
import { checkConfig } from "../../src/config/config_check.ts";
import { ConfigError } from "../../src/config/config_diagnostic.ts";
import { channelSecrets } from "../../src/config/channel_secrets.ts";

const parse = (text: string) => parseConfig(text, "/tmp/coop.toml", "/tmp");
const problems = (text: string) =>
  checkConfig(parse(text), () => "set").filter((d) => d.path.startsWith("channels."))
    .map((d) => `${d.severity} ${d.path}: ${d.message}`);

Deno.test("telegram: bot_token_env and the default API root", () => {
  const config = parse('[channels.telegram]\nenabled = true\nbot_token_env = "TG"\n');
  assertEquals(config.channels.telegram?.api_base_url, "https://api.telegram.org");
  assertEquals(channelSecrets(config), [["TG", "channels.telegram.bot_token_env"]]);
  assertEquals(problems('[channels.telegram]\nenabled = true\nbot_token_env = "TG"\n'), []);
});

Deno.test("telegram: token_env still works, with a warning naming bot_token_env", () => {
  const text = '[channels.telegram]\nenabled = true\ntoken_env = "TG"\n';
  assertEquals(channelSecrets(parse(text)), [["TG", "channels.telegram.token_env"]]);
  const found = problems(text);
  assertEquals(found.length, 1);
  assertMatch(
    found[0],
    /^warning channels\.telegram\.token_env: .*rename it \(bot_token_env = "TG"\)/,
  );
});

Deno.test("telegram: no token variable, or two that disagree, is an error with its key", () => {
  for (
    const [text, path] of [
      ["[channels.telegram]\nenabled = true\n", "channels.telegram.bot_token_env"],
      [
        '[channels.telegram]\nbot_token_env = "A"\ntoken_env = "B"\n',
        "channels.telegram.token_env",
      ],
      [
        '[channels.telegram]\nbot_token_env = "A"\napi_base_url = "ftp://x"\n',
        "channels.telegram.api_base_url",
      ],
    ]
  ) {
    const error = assertThrows(() => parse(text), ConfigError);
    assertEquals(error.diagnostics.map((d) => d.path), [path]);
  }
});

Deno.test("signal: account in international format, rpc_url defaulting to signal-cli's", () => {
  const config = parse('[channels.signal]\nenabled = true\naccount = "+15550001"\n');
  assertEquals(config.channels.signal?.rpc_url, "http://127.0.0.1:8080");
  const error = assertThrows(() => parse('[channels.signal]\naccount = "5550001"\n'), ConfigError);
  assertEquals(error.diagnostics[0].path, "channels.signal.account");
});

Deno.test("plain HTTP to another machine is a warning; loopback and https are not", () => {
  assertEquals(
    problems(
      '[channels.signal]\nenabled = true\naccount = "+15550001"\nrpc_url = "http://10.0.0.5:8080/"\n',
    ).map((p) => p.split(":")[0]),
    ["warning channels.signal.rpc_url"],
  );
  assertEquals(
    problems(
      '[channels.telegram]\nenabled = true\nbot_token_env = "T"\napi_base_url = "http://[::1]:81"\n',
    ),
    [],
  );
});
