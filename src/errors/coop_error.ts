/**
 * `CoopError`: the base of every error Coop throws on purpose.
 * @module
 */

/** Base class of Coop's deliberate errors: a stable `code` and a message a user can act on. */
/** The message of a thrown value, whatever was thrown. */
export function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

export class CoopError extends Error {
  /** A stable machine-readable code, e.g. `config.invalid`. */
  readonly code: string;
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "CoopError";
    this.code = code;
  }
}
