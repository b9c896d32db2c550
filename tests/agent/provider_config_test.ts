import { DEFAULT_PROVIDER_TIMEOUTS } from "../../src/agent/http_transport.ts";
import { providerTimeouts, selectModel } from "../../src/agent/provider_registry.ts";
import { ProviderError } from "../../src/agent/provider_error.ts";
import { parseConfig } from "../../src/config/config.ts";
import { checkConfig } from "../../src/config/config_check.ts";
import { ConfigError } from "../../src/config/config_diagnostic.ts";
import { assert, assertEquals, assertMatch, assertThrows } from "../assert.ts";

const parse = (text: string) => parseConfig(text, "/etc/coop/coop.toml", "/srv");
const problems = (text: string) =>
  checkConfig(parse(text), () => "set").filter((d) => d.code !== "config.no_owner").map((d) =>
    `${d.severity} ${d.path}: ${d.message}`
  );

Deno.test("[[providers]] kind, with type accepted as its older name", () => {
  const config = parse(
    '[[providers]]\nname = "a"\nkind = "anthropic"\n[[providers]]\nname = "o"\ntype = "ollama"\n',
  );
  assertEquals(config.providers.map((p) => [p.name, p.kind]), [["a", "anthropic"], [
    "o",
    "ollama",
  ]]);
  assertEquals(config.agent.maxIterations, 25);
  assertEquals(config.agent.maxTokens, 8192);
});

Deno.test("provider config mistakes name the key", () => {
  const cases: Array<[string, RegExp]> = [
    ['[[providers]]\nname = "a"\n', /providers\[0\]\.kind: is required/],
    [
      '[[providers]]\nname = "a"\nkind = "openai"\ntype = "anthropic"\n',
      /providers\[0\]\.type: contradicts kind/,
    ],
    [
      '[[providers]]\nname = "c"\nkind = "openai_compatible"\n',
      /providers\[0\]\.base_url: is required for kind "openai_compatible"/,
    ],
    ['[[providers]]\nname = "a/b"\nkind = "ollama"\n', /providers\[0\]\.name: must be letters/],
    ["[agent]\nmax_iterations = 0\n", /agent\.max_iterations/],
  ];
  for (const [text, pattern] of cases) {
    const error = assertThrows(() => parse(text), ConfigError);
    assertMatch(error.message, pattern);
  }
});

Deno.test("coop check: agent.model must name a configured provider", () => {
  const providers = '[[providers]]\nname = "local"\nkind = "ollama"\n';
  assertEquals(problems(`[agent]\nmodel = "local/qwen3:8b"\n${providers}`), []);
  assertEquals(problems(`[agent]\nmodel = "qwen3"\n${providers}`), [
    'error agent.model: "qwen3" must be "<provider name>/<model id>", e.g. "anthropic/claude-sonnet-4-5"',
  ]);
  assertEquals(problems(`[agent]\nmodel = "cloud/x"\n${providers}`), [
    'error agent.model: no [[providers]] entry named "cloud" (configured: "local")',
  ]);
  const twice = problems(`[agent]\nmodel = "local/qwen3:8b"\n${providers}${providers}`);
  assertEquals(twice, [
    'error providers[1].name: provider "local" is already defined at providers[0]',
  ]);
  assertEquals(
    problems('[agent]\nmodel = "a/m"\n[[providers]]\nname = "a"\nkind = "anthropic"\n'),
    [
      "warning providers[0]: no api_key_env: requests to the hosted anthropic API carry no key and will be refused (401)",
    ],
  );
});

Deno.test("coop check: a provider that lists models allows agent.model only those", () => {
  const local = '[[providers]]\nname = "local"\nkind = "ollama"\nmodels = ["qwen3:8b", "llama3"]\n';
  assertEquals(problems(`[agent]\nmodel = "local/qwen3:8b"\n${local}`), []);
  assertEquals(problems(`[agent]\nmodel = "local/mistral"\n${local}`), [
    'error agent.model: "mistral" is not one of the models provider "local" allows ' +
    '(providers[0].models: "qwen3:8b", "llama3")',
  ]);
  // The ids are what follows the provider's name, so OpenRouter's keep their own slash.
  const router = '[[providers]]\nname = "or"\nkind = "openai_compatible"\n' +
    'base_url = "https://openrouter.ai/api/v1"\nmodels = ["anthropic/claude-sonnet-4"]\n';
  assertEquals(problems(`[agent]\nmodel = "or/anthropic/claude-sonnet-4"\n${router}`), []);
  // Without models, any id goes to the provider, which answers for itself.
  const open = '[[providers]]\nname = "local"\nkind = "ollama"\n';
  assertEquals(problems(`[agent]\nmodel = "local/anything"\n${open}`), []);
  assertMatch(
    assertThrows(() => parse(`${open}models = []\n`), ConfigError).message,
    /providers\[0\]\.models: must list at least one model id \(leave models out to allow any\)/,
  );
});

Deno.test("selectModel refuses a model its provider's models do not list", () => {
  const entries = [{ name: "local", kind: "ollama" as const, models: ["qwen3:8b"] }];
  assertEquals(selectModel("local/qwen3:8b", entries).model, "qwen3:8b");
  const error = assertThrows(() => selectModel("local/llama3", entries), ProviderError);
  assertEquals(error.code, "provider.not_configured");
  assertMatch(error.message, /asks for "llama3", which is not one of its models \("qwen3:8b"\)/);
});

Deno.test("selectModel splits at the first slash, so OpenRouter model ids keep theirs", () => {
  const entries = [{
    name: "openrouter",
    kind: "openai_compatible" as const,
    base_url: "https://openrouter.ai/api/v1",
  }];
  const selected = selectModel("openrouter/anthropic/claude-sonnet-4", entries);
  assertEquals(selected.model, "anthropic/claude-sonnet-4");
  assertEquals(selected.provider.name, "openrouter");
  const error = assertThrows(() => selectModel("nope/x", entries), ProviderError);
  assertEquals(error.code, "provider.not_configured");
  assert(error.message.includes('"nope"'));
  assertEquals(
    assertThrows(() => selectModel(undefined, entries), ProviderError).code,
    "provider.not_configured",
  );
});

Deno.test("[[providers]] timeouts are durations, per provider, with defaults", () => {
  const config = parse(
    '[[providers]]\nname = "local"\nkind = "ollama"\nconnect_timeout = "2s"\n' +
      'first_byte_timeout = "5m"\nidle_timeout = 90\n' +
      '[[providers]]\nname = "cloud"\nkind = "anthropic"\nidle_timeout = "1500ms"\n',
  );
  assertEquals(providerTimeouts(config.providers[0]), {
    connectMs: 2000,
    firstByteMs: 300_000,
    idleMs: 90_000,
  });
  assertEquals(providerTimeouts(config.providers[1]), {
    ...DEFAULT_PROVIDER_TIMEOUTS,
    idleMs: 1500,
  });
  assertEquals(DEFAULT_PROVIDER_TIMEOUTS, {
    connectMs: 10_000,
    firstByteMs: 120_000,
    idleMs: 120_000,
  });
  const cases: Array<[string, RegExp]> = [
    ['connect_timeout = "0s"', /providers\[0\]\.connect_timeout: must be from 1ms to/],
    [
      'first_byte_timeout = "soon"',
      /providers\[0\]\.first_byte_timeout: expected a duration like "30s", "5m" or "500ms", got "soon"/,
    ],
    ["idle_timeout = true", /providers\[0\]\.idle_timeout: expected a duration/],
  ];
  for (const [line, pattern] of cases) {
    const text = `[[providers]]\nname = "a"\nkind = "ollama"\n${line}\n`;
    assertMatch(assertThrows(() => parse(text), ConfigError).message, pattern);
  }
});
