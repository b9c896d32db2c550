/**
 * The `budget` section of `coop explain`: the budgets a turn of this person would be checked
 * against (`BudgetGate.scopesFor`, the gateway's own choice: theirs and their group chat's), each
 * limit beside what was used in its rolling window (`UsageStore.totals`, read-only from the state
 * database), and what happens when one is spent.
 * @module
 */
import { type Budget, BUDGET_KINDS, type BudgetKind } from "../config/budget_settings.ts";
import { readUsage } from "../state/usage_reader.ts";
import { BudgetGate, type BudgetScope } from "./budget_gate.ts";
import type { ExplainContext, ExplainSection, ExplainSectionResult } from "./explain_sections.ts";
import { sessionOwner } from "./router.ts";
import { usedBy, type WindowUsage } from "./usage_report.ts";

/** One configured limit, beside its usage. */
export interface ExplainedLimit {
  /** The config key, e.g. `turns_per_hour`. */
  key: BudgetKind["key"];
  limit: number;
  /** What was used in the window (turns, tokens or CPU seconds). */
  used: number;
  /** The rolling window's length. */
  windowSeconds: number;
  /** Used up: the next turn is refused. */
  spent: boolean;
}

/** `sections.budget` of `coop explain --json`. */
export interface BudgetExplanation {
  /** Whose usage is counted: the user's name, or `public:<sender>` for an unknown sender. */
  person: string;
  /** The owner without a budget of their own is never refused. */
  exempt: boolean;
  /** What the person used in each budget key's window. */
  usage: WindowUsage;
  /** The budgets that apply (the person's, the group chat's), in the order they are checked. */
  budgets: (Omit<BudgetScope, "budget"> & { limits: ExplainedLimit[] })[];
  /** What a turn gets once a budget is spent. */
  whenSpent: string;
}

const WHEN_SPENT = "the turn is refused before any model call: one polite reply in a chat, " +
  "HTTP 429 gateway.budget_exceeded naming the budget; rolling windows, so it frees up as " +
  "usage ages out";

function limitsOf(budget: Budget, used: WindowUsage): ExplainedLimit[] {
  return BUDGET_KINDS.filter((k) => budget[k.key] !== undefined).map((k) => ({
    key: k.key,
    limit: budget[k.key]!,
    used: used[k.key],
    windowSeconds: k.windowMs / 1000,
    spent: used[k.key] >= budget[k.key]!,
  }));
}

function build(context: ExplainContext): Promise<ExplainSectionResult | null> {
  const { config, route, channel, group } = context;
  const person = sessionOwner(route, { channel, sender: context.sender ?? "" });
  const read = readUsage(config.agent.stateDir, (usage) => {
    const scopes = new BudgetGate(config, usage).scopesFor(route, channel, group);
    return {
      usage: usedBy(usage, { person }),
      budgets: scopes.map(({ budget, ...scope }) => ({
        ...scope,
        limits: limitsOf(
          budget,
          usedBy(usage, scope.scope === "user" ? { person: scope.name } : { group: scope.name }),
        ),
      })),
    };
  });
  if ("problem" in read) {
    return Promise.resolve({ json: { problem: read.problem }, lines: [read.problem] });
  }
  const exempt = route.principal.trust === "owner" && read.budgets.length === 0;
  const json: BudgetExplanation = { person, exempt, ...read, whenSpent: WHEN_SPENT };
  const u = read.usage;
  const lines = [
    `used by ${person}: ${u.turns_per_hour} turns in the last hour; ${u.tokens_per_day} tokens ` +
    `and ${u.sandbox_seconds_per_day} sandbox seconds in the last 24 hours`,
  ];
  for (const b of read.budgets) {
    const limits = b.limits.map((l) => `${l.key} ${l.used}/${l.limit}${l.spent ? " SPENT" : ""}`);
    lines.push(`${b.setting}: ${limits.join(", ") || "no limits set"}`);
  }
  if (exempt) lines.push("no budget: the owner without a budget of their own is exempt");
  else if (read.budgets.length === 0) lines.push("no budget applies: turns are not limited");
  else lines.push(`when one is spent: ${WHEN_SPENT}`);
  return Promise.resolve({ json, lines });
}

/** The section registered in `EXPLAIN_SECTIONS`. */
export const BUDGET_SECTION: ExplainSection = { name: "budget", build };
