/**
 * EXTENSION POINT of `coop explain`: sections other parts of Coop add to the report (budgets
 * and usage first). Each section gets the resolved identity and returns its JSON value and
 * the lines printed for it; a section with nothing to say returns null and is left out.
 * @module
 */
import type { CoopConfig, UserConfig } from "../config/config.ts";
import type { Principal } from "../trust/authorization.ts";
import type { TrustLevel } from "../trust/trust_level.ts";
import type { GroupConfig } from "../config/config.ts";
import type { Route } from "./router.ts";
import { BUDGET_SECTION } from "./explain_budget.ts";

/** What a section is told about the person being explained. */
export interface ExplainContext {
  /** The loaded config. */
  config: CoopConfig;
  /** The principal a turn would run as. */
  principal: Principal;
  /** The configured user, when one matched. */
  user?: UserConfig;
  /** The channel of the turn. */
  channel: string;
  /** The group chat (its id after the channel), when explaining a group turn. */
  group?: string;
  /** The `[[groups]]` entry the group matched, if any. */
  groupConfig?: GroupConfig;
  /** The effective trust of a fresh turn. */
  effectiveTrust: TrustLevel;
  /** The route a turn takes (what `BudgetGate.scopesFor` reads). */
  route: Route;
  /** The sender on the channel, when known (an unknown sender's usage is counted per sender). */
  sender: string | null;
}

/** One section's contribution. */
export interface ExplainSectionResult {
  /** The value under `sections.<name>` in `--json`. */
  json: unknown;
  /** Lines printed under the section's heading. */
  lines: string[];
}

/** A section of the report, e.g. `budget`. */
export interface ExplainSection {
  /** Key under `sections` in `--json`, and the heading. */
  name: string;
  /** Builds the section; may read state (usage counters). Null leaves it out. */
  build(context: ExplainContext): Promise<ExplainSectionResult | null>;
}

/**
 * The sections `coop explain` adds after its own. The budgets work registers its section
 * here (budgets configured for the user and group, and usage so far from the state
 * database): one import and one entry.
 */
export const EXPLAIN_SECTIONS: ExplainSection[] = [BUDGET_SECTION];
