/**
 * Budgets: `[users.budget]` and `[groups.budget]` (a `budget` table inside a `[[users]]` or
 * `[[groups]]` entry) — how many turns, model tokens and sandbox CPU seconds a person or a group
 * chat may use in a rolling window. The gateway enforces them (`budget_gate.ts`).
 * @module
 */
import { z } from "zod";

const count = (max: number) =>
  z.number().int("must be a whole number").min(0, "must be at least 0 (0: none at all)")
    .max(max, `must be at most ${max}`);

/** The `budget` table's schema; every key is optional (absent: no limit on that). */
export const budgetSchema = z.strictObject({
  turns_per_hour: count(1_000_000).optional(),
  tokens_per_day: count(1_000_000_000_000).optional(),
  sandbox_seconds_per_day: count(86_400 * 1000).optional(),
});

/** One budget key: what it counts, and the rolling window it counts over. */
export interface BudgetKind {
  /** The config key, e.g. `turns_per_hour`. */
  key: "turns_per_hour" | "tokens_per_day" | "sandbox_seconds_per_day";
  /** What is counted, for messages: `turns`, `tokens`, `sandbox seconds`. */
  unit: string;
  /** The window's length in milliseconds (rolling: the last hour, the last 24 hours). */
  windowMs: number;
  /** The window in words, e.g. `the last hour`. */
  window: string;
}

/** Every budget key, in the order reports show them. */
export const BUDGET_KINDS: readonly BudgetKind[] = [
  { key: "turns_per_hour", unit: "turns", windowMs: 3_600_000, window: "the last hour" },
  { key: "tokens_per_day", unit: "tokens", windowMs: 86_400_000, window: "the last 24 hours" },
  {
    key: "sandbox_seconds_per_day",
    unit: "sandbox seconds",
    windowMs: 86_400_000,
    window: "the last 24 hours",
  },
];

/** A budget as configured: limits by key; an absent key has no limit. */
export type Budget = Partial<Record<BudgetKind["key"], number>>;

/** The longest window any budget counts over: older usage can be forgotten. */
export const LONGEST_BUDGET_WINDOW_MS = Math.max(...BUDGET_KINDS.map((k) => k.windowMs));
