/**
 * `EnvironmentError`: an environment cannot be used for a command.
 * @module
 */
import { CoopError } from "../errors/coop_error.ts";

/** An environment cannot be used for a command: not built, no session for a session upper … */
export class EnvironmentError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "EnvironmentError";
  }
}
