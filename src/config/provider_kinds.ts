/**
 * What config knows of providers: the wire formats a `[[providers]]` entry can name, and how
 * `[agent] model` names one of them. The providers themselves live in `src/agent/`.
 * @module
 */

/** The wire formats a `[[providers]]` entry can name (`anthropic`: Messages; others: Chat Completions). */
export const PROVIDER_KINDS = ["anthropic", "openai", "openai_compatible", "ollama"] as const;

/** One of `PROVIDER_KINDS`. */
export type ProviderKind = (typeof PROVIDER_KINDS)[number];

/**
 * Splits `"<provider name>/<model id>"` at the first `/` (OpenRouter ids such as
 * `openrouter/anthropic/claude-sonnet-4` keep theirs); null when either side is empty.
 */
export function parseModelRef(model: string): { provider: string; model: string } | null {
  const slash = model.indexOf("/");
  if (slash <= 0 || slash === model.length - 1) return null;
  return { provider: model.slice(0, slash), model: model.slice(slash + 1) };
}
