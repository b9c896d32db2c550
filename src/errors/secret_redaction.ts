/**
 * Removes a secret from text before it reaches a log line or an error message. Telegram puts
 * the bot token in every request's URL (`/bot<token>/getMe`), and `fetch` quotes that URL in its
 * errors; every message derived from such an error passes through here.
 * @module
 */

/** What replaces a secret. */
export const REDACTED = "<redacted>";

/** Anything shaped like a Bot API token (`<bot id>:<35 characters>`), known or not. */
const BOT_TOKEN_SHAPE = /\b\d{3,}:[A-Za-z0-9_-]{20,}\b/g;

/**
 * `text` with every occurrence of each secret (also URL-encoded) and of anything shaped like a
 * bot token replaced by `<redacted>`.
 *
 * @example
 * ```ts
 * redactSecrets("GET /bot123:abc/getMe failed", ["123:abc"]); // "GET /bot<redacted>/getMe failed"
 * ```
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let out = text;
  for (const secret of secrets) {
    if (secret === "") continue;
    out = out.replaceAll(secret, REDACTED);
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.replaceAll(encoded, REDACTED);
  }
  return out.replace(BOT_TOKEN_SHAPE, REDACTED);
}
