/**
 * The gateway's own error: a turn that could not run or failed.
 * @module
 */
import { CoopError } from "../errors/coop_error.ts";

/** A turn that could not run or failed; `code` is stable, the message safe to show the owner. */
export class GatewayError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "GatewayError";
  }
}
