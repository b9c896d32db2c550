/**
 * Picks the provider named by `[agent] model = "<provider name>/<model id>"` from
 * `[[providers]]` and builds it, reading its API key from the environment.
 * @module
 */
import { ANTHROPIC_DEFAULT_BASE_URL, AnthropicProvider } from "./anthropic.ts";
import type { HttpDependencies, RetryPolicy } from "./http_retry.ts";
import { DEFAULT_PROVIDER_TIMEOUTS, type ProviderTimeouts } from "./http_transport.ts";
import { OpenAiProvider } from "./openai.ts";
import type { Provider } from "./provider.ts";
import { ProviderError } from "./provider_error.ts";
import { parseModelRef, type ProviderKind } from "../config/provider_kinds.ts";

/** One `[[providers]]` entry as config validated it (durations in milliseconds). */
export interface ProviderEntry {
  name: string;
  kind: ProviderKind;
  base_url?: string;
  api_key_env?: string;
  /** The model ids this provider may be asked for; absent: any. */
  models?: readonly string[];
  /** Longest wait for the connection (TCP and TLS); default 10 s. */
  connect_timeout?: number;
  /** Longest wait from connected to the response headers; default 120 s. */
  first_byte_timeout?: number;
  /** Longest wait between two chunks of the response stream; default 120 s. */
  idle_timeout?: number;
}

/** The entry's timeouts, each defaulting to `DEFAULT_PROVIDER_TIMEOUTS`. */
export function providerTimeouts(entry: ProviderEntry): ProviderTimeouts {
  return {
    connectMs: entry.connect_timeout ?? DEFAULT_PROVIDER_TIMEOUTS.connectMs,
    firstByteMs: entry.first_byte_timeout ?? DEFAULT_PROVIDER_TIMEOUTS.firstByteMs,
    idleMs: entry.idle_timeout ?? DEFAULT_PROVIDER_TIMEOUTS.idleMs,
  };
}

/** Default base URLs per kind (`openai_compatible` has none: config requires `base_url`). */
export const DEFAULT_BASE_URLS: Readonly<Record<ProviderKind, string | null>> = {
  anthropic: ANTHROPIC_DEFAULT_BASE_URL,
  openai: "https://api.openai.com/v1",
  openai_compatible: null,
  ollama: "http://127.0.0.1:11434/v1",
};

/** Options shared by every provider built here (tests shorten retries, inject fetch). */
export interface ProviderOptions {
  /** Looks up environment variables; default `Deno.env.get`. */
  env?: (name: string) => string | undefined;
  retry?: Readonly<RetryPolicy>;
  http?: HttpDependencies;
}

/** The provider and model id a turn should use. */
export interface SelectedModel {
  provider: Provider;
  /** The model id without the provider prefix, e.g. `claude-sonnet-4-5`. */
  model: string;
}

/**
 * Builds the provider for one entry. Throws `ProviderError` `provider.missing_key` when
 * `api_key_env` names a variable that is not set; without `api_key_env` no key is sent.
 */
export function createProvider(entry: ProviderEntry, options: ProviderOptions = {}): Provider {
  const env = options.env ?? ((name: string) => Deno.env.get(name));
  let apiKey: string | null = null;
  if (entry.api_key_env !== undefined) {
    apiKey = env(entry.api_key_env) ?? "";
    if (apiKey === "") {
      throw new ProviderError(
        "provider.missing_key",
        entry.name,
        `environment variable ${entry.api_key_env} is not set`,
      );
    }
  }
  const baseUrl = entry.base_url ?? DEFAULT_BASE_URLS[entry.kind];
  if (baseUrl === null) {
    throw new ProviderError(
      "provider.not_configured",
      entry.name,
      `kind "${entry.kind}" needs a base_url`,
    );
  }
  const common = {
    name: entry.name,
    baseUrl,
    apiKey,
    retry: options.retry,
    timeouts: providerTimeouts(entry),
    http: options.http,
  };
  if (entry.kind === "anthropic") return new AnthropicProvider(common);
  return new OpenAiProvider({
    ...common,
    maxTokensField: entry.kind === "openai" ? "max_completion_tokens" : "max_tokens",
  });
}

/**
 * Resolves `model` (`"<provider name>/<model id>"`, split at the first `/` so OpenRouter ids
 * like `openrouter/anthropic/claude-sonnet-4` work) against `providers`.
 */
export function selectModel(
  model: string | undefined,
  providers: readonly ProviderEntry[],
  options: ProviderOptions = {},
): SelectedModel {
  if (!model) {
    throw new ProviderError(
      "provider.not_configured",
      "(none)",
      'no model configured; set [agent] model = "<provider name>/<model id>"',
    );
  }
  const ref = parseModelRef(model);
  if (!ref) {
    throw new ProviderError(
      "provider.not_configured",
      model,
      `[agent] model must be "<provider name>/<model id>", got "${model}"`,
    );
  }
  const entry = providers.find((p) => p.name === ref.provider);
  if (!entry) {
    throw new ProviderError(
      "provider.not_configured",
      ref.provider,
      "[agent] model names it, but there is no [[providers]] entry with that name",
    );
  }
  // `coop check` refuses such a config; this keeps a config that skipped it from using the model.
  if (entry.models !== undefined && !entry.models.includes(ref.model)) {
    throw new ProviderError(
      "provider.not_configured",
      entry.name,
      `[agent] model asks for "${ref.model}", which is not one of its models ` +
        `(${entry.models.map((m) => `"${m}"`).join(", ")})`,
    );
  }
  return { provider: createProvider(entry, options), model: ref.model };
}
