/**
 * `TurnRefusedError`: a turn the gateway declined before any model call (too many turns at
 * once, a budget spent, …). Every channel answers it the same way: HTTP with `httpStatus` and the
 * error's `code` and `details`; a messenger by sending `reply` to the chat.
 * @module
 */
import { CoopError } from "./coop_error.ts";

/** A turn declined on purpose, with an answer safe to show the person who asked. */
export class TurnRefusedError extends CoopError {
  /** The HTTP channel's status for it (429 for limits and budgets). */
  readonly httpStatus: number;
  /** One polite sentence for a chat (Telegram, Signal, terminal): what happened, what to do. */
  readonly reply: string;
  /** JSON-safe facts the HTTP channel adds to its error object (e.g. which limit). */
  readonly details: Record<string, unknown>;
  constructor(
    code: string,
    message: string,
    refusal: { httpStatus: number; reply: string; details?: Record<string, unknown> },
    options?: ErrorOptions,
  ) {
    super(code, message, options);
    this.name = "TurnRefusedError";
    this.httpStatus = refusal.httpStatus;
    this.reply = refusal.reply;
    this.details = refusal.details ?? {};
  }
}
