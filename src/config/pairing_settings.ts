/**
 * `[pairing]`: how unknown senders in direct messenger chats are paired (docs/config.md).
 * @module
 */
import { z } from "zod";
import { pairingCodeTtl } from "./config_units.ts";
import { type Budget, budgetSchema } from "./budget_settings.ts";

/** Defaults of `[pairing]`. */
export const PAIRING_DEFAULTS = {
  enabled: true,
  /** One hour, in milliseconds. */
  code_ttl: 3_600_000,
  max_pending: 20,
} as const;

/** The `[pairing]` table; every key has a default. */
export const pairingSchema = z.strictObject({
  enabled: z.boolean().default(PAIRING_DEFAULTS.enabled),
  code_ttl: pairingCodeTtl.default(PAIRING_DEFAULTS.code_ttl),
  max_pending: z.number().int("must be a whole number").min(1, "must be at least 1")
    .max(1000, "must be at most 1000").default(PAIRING_DEFAULTS.max_pending),
  budget: budgetSchema.optional(),
}).prefault({});

/** `[pairing]` as the gateway uses it. */
export interface PairingSettings {
  /** Unknown senders in direct messenger chats get a code (false: they are `public`). */
  enabled: boolean;
  /** How long a code stays valid, in milliseconds. */
  codeTtlMs: number;
  /** Pending requests at most; a new sender past it gets no code (logged). */
  maxPending: number;
  /** `[pairing.budget]`: what each paired person may use (their own counters, by name). */
  budget?: Budget;
}
