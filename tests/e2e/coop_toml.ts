/**
 * The config the end-to-end and gateway tests share: alice (owner, terminal), bob (full, HTTP),
 * carol (familiar, HTTP) and one scripted provider. `{{dir}}` stands for the test's directory.
 * @module
 */

/** What varies between tests. */
export interface TestConfig {
  /** Provider wire format: `anthropic` or `openai_compatible`. */
  kind: string;
  /** The scripted server's base URL. */
  baseUrl: string;
  /** More TOML after the shared part (`[channels.http]`, `[[cron]]`, `[users.sandbox]` …). */
  extra?: string;
  /** TOML right after bob's `[[users]]` entry, e.g. `[users.sandbox]`. */
  bob?: string;
}

/** Returns the shared config text with `{{dir}}` left for the caller to fill. */
export function coopToml(config: TestConfig): string {
  return `
[agent]
model = "scripted/test-model"
workspace = "{{dir}}/workspace"
state_dir = "{{dir}}/state"

[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]

[[users]]
name = "carol"
trust = "familiar"
match = ["http:carol"]

[[users]]
name = "bob"
trust = "full"
match = ["http:bob"]
${config.bob ?? ""}

[[providers]]
name = "scripted"
kind = "${config.kind}"
base_url = "${config.baseUrl}"
${config.extra ?? ""}`;
}

/** `[channels.http]` on a free loopback port with a token per id (`<ID>_TOKEN`). */
export function httpChannelToml(ids: readonly string[]): string {
  return `
[channels.http]
enabled = true
listen = "127.0.0.1:0"
${
    ids.map((id) =>
      `[[channels.http.tokens]]\nid = "${id}"\ntoken_env = "${id.toUpperCase()}_TOKEN"`
    ).join("\n")
  }
`;
}
