/**
 * `ProviderError`: every way talking to an LLM API can fail, with a stable code.
 * @module
 */
import { CoopError } from "../core/errors.ts";

/** Stable codes of provider failures. */
export type ProviderErrorCode =
  | "provider.not_configured"
  | "provider.missing_key"
  | "provider.auth"
  | "provider.http"
  | "provider.unavailable"
  | "provider.malformed"
  | "provider.stream"
  | "provider.unknown";

/** A failure to get an answer from a provider, naming the provider and what to do. */
export class ProviderError extends CoopError {
  /** The configured provider name. */
  readonly provider: string;
  /** The HTTP status, when the failure was an HTTP response. */
  readonly status: number | null;
  constructor(
    code: ProviderErrorCode,
    provider: string,
    message: string,
    options: ErrorOptions & { status?: number } = {},
  ) {
    super(code, `provider "${provider}": ${message}`, options);
    this.name = "ProviderError";
    this.provider = provider;
    this.status = options.status ?? null;
  }
}
