/**
 * `coop check`: model providers — names, keys, base URLs, and the model the agent uses.
 * @module
 */
import { parseModelRef } from "./provider_kinds.ts";
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError, configWarning } from "./config_diagnostic.ts";

/** Duplicate providers, missing keys, base URLs, and `agent.model`: its provider and model. */
export function checkProviders(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const seen = new Map<string, number>();
  config.providers.forEach((provider, i) => {
    const previous = seen.get(provider.name);
    if (previous !== undefined) {
      out.push(configError(
        "config.duplicate_provider",
        `providers[${i}].name`,
        `provider "${provider.name}" is already defined at providers[${previous}]`,
      ));
    } else seen.set(provider.name, i);
    const scheme = provider.base_url === undefined ? "" : new URL(provider.base_url).protocol;
    if (scheme && scheme !== "http:" && scheme !== "https:") {
      out.push(configError(
        "config.provider_base_url",
        `providers[${i}].base_url`,
        `must be an http:// or https:// URL (the provider is called over HTTP), got ` +
          `"${provider.base_url}"`,
      ));
    }
    const hosted = provider.kind === "anthropic" || provider.kind === "openai";
    if (hosted && provider.base_url === undefined && provider.api_key_env === undefined) {
      out.push(configWarning(
        "config.provider_without_key",
        `providers[${i}]`,
        `no api_key_env: requests to the hosted ${provider.kind} API carry no key and will be ` +
          "refused (401)",
      ));
    }
  });
  const model = config.agent.model;
  if (model === undefined) {
    out.push(configWarning(
      "config.no_model",
      "agent.model",
      "no model is configured: every message gets an error instead of a reply; set " +
        'agent.model = "<provider name>/<model id>", e.g. "anthropic/claude-sonnet-4-5"',
    ));
    return;
  }
  const ref = parseModelRef(model);
  if (!ref) {
    out.push(configError(
      "config.model_format",
      "agent.model",
      `"${model}" must be "<provider name>/<model id>", e.g. "anthropic/claude-sonnet-4-5"`,
    ));
    return;
  }
  const name = ref.provider;
  const index = seen.get(name);
  if (index === undefined) {
    const known = config.providers.map((p) => `"${p.name}"`).join(", ");
    out.push(configError(
      "config.unknown_provider",
      "agent.model",
      `no [[providers]] entry named "${name}"` + (known ? ` (configured: ${known})` : ""),
    ));
    return;
  }
  // `agent.model` is the only model a turn uses: no user, group or cron job chooses another.
  const models = config.providers[index].models;
  if (models !== undefined && !models.includes(ref.model)) {
    out.push(configError(
      "config.model_not_listed",
      "agent.model",
      `"${ref.model}" is not one of the models provider "${name}" allows ` +
        `(providers[${index}].models: ${models.map((m) => `"${m}"`).join(", ")})`,
    ));
  }
}
