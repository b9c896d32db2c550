/**
 * Budgets at the door of a turn: before any model call, every budget that applies to the sender
 * (`[users.budget]`) and to the group chat (`[groups.budget]`) is checked against the usage
 * counters; one that is spent refuses the turn with `BudgetExceededError` (HTTP 429, one polite
 * chat reply). A turn let in is recorded at once, and its tokens and sandbox CPU time are added
 * as they are measured. Windows are rolling (docs/security.md "Budgets").
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { TurnRefusedError } from "../errors/turn_refused.ts";
import type { CoopConfig } from "../config/config.ts";
import { type Budget, BUDGET_KINDS, type BudgetKind } from "../config/budget_settings.ts";
import type { TurnUsage, UsageStore, UsageSubject, UsageTotals } from "../state/usage_store.ts";
import { matchGroup, type Route } from "./router.ts";

const log = getLogger(["coop", "gateway"]);
const SANDBOX_SECONDS = "sandbox_seconds_per_day";

/** A budget that applies to a turn: whose, where it is configured, and its limits. */
export interface BudgetScope {
  /** `user` for `[users.budget]`, `group` for `[groups.budget]`. */
  scope: "user" | "group";
  /** The user's name, or the group's label (its `name`, else its first pattern). */
  name: string;
  /** Where it is configured, for messages: `[[users]] "bob" budget`. */
  setting: string;
  /** The limits. */
  budget: Budget;
}

/** One spent budget, as the HTTP channel's 429 `details.budget` names it. */
export interface SpentBudget {
  scope: "user" | "group";
  name: string;
  /** The config key, e.g. `turns_per_hour`. */
  key: BudgetKind["key"];
  limit: number;
  /** What was used in the window (turns, tokens or CPU seconds). */
  used: number;
  /** `rolling`: the window always ends now. */
  window: "rolling";
  windowSeconds: number;
  /** Seconds until enough of the window's usage has aged out to allow a turn again. */
  retryAfterSeconds: number;
  /** Where it is configured, e.g. `[[users]] "bob" budget.turns_per_hour`. */
  setting: string;
}

/** A turn refused because a budget of its sender or its group chat is spent. */
export class BudgetExceededError extends TurnRefusedError {
  /** The budget that was spent. */
  readonly budget: SpentBudget;
  constructor(spent: SpentBudget, kind: BudgetKind) {
    const whose = spent.scope === "user" ? "You have" : "This group has";
    super(
      "gateway.budget_exceeded",
      `budget spent: ${spent.setting} = ${spent.limit}, and ${formatAmount(spent.used)} ` +
        `${kind.unit} were used in ${kind.window}; the next turn is possible in ` +
        `${spent.retryAfterSeconds} s (raise or remove the budget in the config to allow more)`,
      {
        httpStatus: 429,
        reply: `${whose} used up ${spent.scope === "user" ? "your" : "its"} allowance of ` +
          `${spent.limit} ${kind.unit} for ${kind.window}, so I will not answer this one. ` +
          `Please try again ${inAbout(spent.retryAfterSeconds)}.`,
        details: { budget: spent },
      },
    );
    this.name = "BudgetExceededError";
    this.budget = spent;
  }
}

function formatAmount(n: number): string {
  return Number.isInteger(n) ? String(n) : n.toFixed(1);
}

function inAbout(seconds: number): string {
  const minutes = Math.max(1, Math.ceil(seconds / 60));
  if (minutes === 1) return "in a minute";
  if (minutes < 120) return `in about ${minutes} minutes`;
  return `in about ${Math.ceil(minutes / 60)} hours`;
}

/** Adds what a running turn uses to its counters. */
export interface TurnMeter {
  /** Model tokens of one response (input + output), as the provider reported them. */
  addTokens(tokens: number): void;
  /** CPU seconds one sandboxed command used, measured. */
  addSandboxSeconds(seconds: number): void;
  /**
   * Whether a `sandbox_seconds_per_day` budget of this turn (its person's, its group chat's) is
   * spent now: a live session sandbox whose background CPU spends it is stopped.
   */
  sandboxBudgetSpent(): boolean;
  /**
   * The turn has answered (its usage is committed with its flush): what is charged to it from
   * now on — a live session's background CPU when the session ends — is committed at once.
   */
  end(): void;
}

/** A turn at the door: who sends it, from where. */
export interface BudgetedTurn {
  route: Route;
  /** Whose usage it is: the user's name, or `public:<sender>` for a default principal. */
  person: string;
  channel: string;
  /** The group chat, as `IncomingMessage.group` names it; absent in a direct chat. */
  group?: string;
}

function amountOf(key: BudgetKind["key"], u: UsageTotals | TurnUsage): number {
  if (key === "turns_per_hour") return "turns" in u ? u.turns : 1;
  return key === "tokens_per_day" ? u.tokens : u.sandboxSeconds;
}

/**
 * Checks and records turns against the configured budgets.
 *
 * @example
 * ```ts
 * const gate = new BudgetGate(config, new UsageStore(db));
 * const meter = gate.admit({ route, person: "bob", channel: "http" }); // or throws
 * meter.addTokens(1200);
 * ```
 */
export class BudgetGate {
  readonly #config: Pick<CoopConfig, "groups">;
  readonly #usage: UsageStore;
  readonly #now: () => number;

  constructor(config: Pick<CoopConfig, "groups">, usage: UsageStore, now: () => number = Date.now) {
    this.#config = config;
    this.#usage = usage;
    this.#now = now;
  }

  /**
   * The budgets that apply to a turn of `route` in `group` on `channel`: the user's and the
   * group chat's; none for the owner unless their own entry has a budget (`isExempt`).
   */
  scopesFor(route: Route, channel: string, group?: string): BudgetScope[] {
    if (isExempt(route)) return [];
    const scopes: BudgetScope[] = [];
    const own = route.user?.budget;
    if (route.user && own) {
      scopes.push({
        scope: "user",
        name: route.user.name,
        // A paired person's is `[pairing.budget]`, each person counted on their own.
        setting: route.reason === "paired"
          ? "[pairing] budget"
          : `[[users]] "${route.user.name}" budget`,
        budget: own,
      });
    }
    const chat = this.#group(channel, group);
    if (chat?.budget) {
      const name = groupLabel(chat);
      scopes.push({
        scope: "group",
        name,
        setting: `[[groups]] "${name}" budget`,
        budget: chat.budget,
      });
    }
    return scopes;
  }

  /**
   * Refuses the turn with `BudgetExceededError` when a budget that applies is spent; otherwise
   * records it (it counts from now on) and returns its meter. An exempt owner's turn is recorded
   * as their own usage only, never against a group chat's budget.
   */
  admit(turn: BudgetedTurn): TurnMeter {
    const scopes = this.scopesFor(turn.route, turn.channel, turn.group);
    for (const scope of scopes) {
      const spent = this.#spent(scope);
      if (spent) {
        log.warn("gateway.budget_exceeded {setting}: {used} of {limit}", {
          event: "gateway.budget_exceeded",
          person: turn.person,
          channel: turn.channel,
          ...spent.budget,
        });
        throw spent;
      }
    }
    const chat = isExempt(turn.route) ? undefined : this.#group(turn.channel, turn.group);
    const id = this.#usage.beginTurn({
      person: turn.person,
      group: chat && groupLabel(chat),
      channel: turn.channel,
    });
    let ended = false;
    const late = () => ended && this.#usage.writePending();
    return {
      addTokens: (tokens) => {
        this.#usage.addTokens(id, tokens);
        late();
      },
      addSandboxSeconds: (seconds) => {
        this.#usage.addSandboxSeconds(id, seconds);
        late();
      },
      sandboxBudgetSpent: () =>
        scopes.some((scope) => this.#spent(scope, SANDBOX_SECONDS) !== null),
      end: () => ended = true,
    };
  }

  #group(channel: string, group: string | undefined) {
    return group === undefined ? undefined : matchGroup(this.#config.groups, channel, group);
  }

  /** The first budget of `scope` that is spent (of kind `only`, when given), or null. */
  #spent(scope: BudgetScope, only?: BudgetKind["key"]): BudgetExceededError | null {
    const subject: UsageSubject = scope.scope === "user"
      ? { person: scope.name }
      : { group: scope.name };
    for (const kind of BUDGET_KINDS) {
      if (only !== undefined && kind.key !== only) continue;
      const limit = scope.budget[kind.key];
      if (limit === undefined) continue;
      const used = amountOf(kind.key, this.#usage.totals(subject, kind.windowMs));
      if (used < limit) continue;
      return new BudgetExceededError({
        scope: scope.scope,
        name: scope.name,
        key: kind.key,
        limit,
        used,
        window: "rolling",
        windowSeconds: kind.windowMs / 1000,
        retryAfterSeconds: this.#retryAfter(subject, kind, limit, used),
        setting: `${scope.setting}.${kind.key}`,
      }, kind);
    }
    return null;
  }

  /** Seconds until the oldest turns of the window have aged out far enough to go under `limit`. */
  #retryAfter(subject: UsageSubject, kind: BudgetKind, limit: number, used: number): number {
    let left = used;
    for (const turn of this.#usage.turns(subject, kind.windowMs)) {
      left -= amountOf(kind.key, turn);
      if (left < limit) {
        return Math.max(1, Math.ceil((turn.at + kind.windowMs - this.#now()) / 1000));
      }
    }
    // A limit of 0 never frees up: the whole window, as a hint.
    return kind.windowMs / 1000;
  }
}

/**
 * The owner without a budget of their own is never counted against one: the owner pays for the
 * model and owns the machine, and a limit would only stand in their own way.
 */
function isExempt(route: Route): boolean {
  return route.principal.trust === "owner" && route.user?.budget === undefined;
}

/** A group's label in budgets and reports: its `name`, else its first pattern. */
export function groupLabel(group: { name?: string; match: readonly string[] }): string {
  return group.name ?? group.match[0];
}
