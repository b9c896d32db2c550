/**
 * The trust of one turn as it runs: the least trusted of its principal, the group ceiling and
 * every contributor — the session history it starts from and every memory it reads on the way
 * (ATTACKS P14). This is the one place that decides what lowers a turn; `effectiveTrust()` turns
 * the result into a level and `authorize()` decides each action with it.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { MemoryHit } from "../state/memory_store.ts";
import {
  leastTrusted,
  leastTrustedReaderOf,
  mostTrusted,
  type TrustLevel,
} from "../trust/trust_level.ts";
import { effectiveTrust, type Principal, type Situation } from "../trust/authorization.ts";

const log = getLogger(["coop", "authz"]);

/** A turn's circumstances without the config flag (the executor adds `sandboxEnabled`). */
export type TurnSituation = Omit<Situation, "sandboxEnabled">;

/** What of a memory matters for taint and for saying why a turn was lowered. */
export type MemoryProvenance = Pick<MemoryHit, "id" | "store" | "author" | "trust">;

/**
 * A turn's contributors, growing as the turn reads. History rows contribute the trust they were
 * written at; a memory contributes the trust its row records (the effective trust of the turn
 * that wrote it, never more than its author's own). Contributors are only ever added: nothing a
 * turn does raises its trust again.
 *
 * @example
 * ```ts
 * const taint = TurnTaint.fromHistory(owner, { channel: "terminal", ceiling: null }, history);
 * taint.read([{ id: 3, store: "social", author: "carol", trust: "familiar" }]);
 * taint.trust; // "familiar": every later tool call is authorized at that trust
 * ```
 */
export class TurnTaint {
  /** Who the turn belongs to. */
  readonly principal: Principal;
  readonly #channel: string;
  readonly #ceiling: TrustLevel | null;
  readonly #contributors: Set<TrustLevel>;
  readonly #loweredBy: MemoryProvenance[] = [];
  /** The files that lowered it, with whose directory each was in. */
  readonly #filesBy: { path: string; name: string; trust: TrustLevel }[] = [];
  /** The most trusted level of anything in the turn's context (`Situation.holds`). */
  #holds: TrustLevel;

  constructor(principal: Principal, situation: TurnSituation) {
    this.principal = principal;
    this.#channel = situation.channel;
    this.#ceiling = situation.ceiling;
    this.#contributors = new Set(situation.contributors);
    // What the principal says in this chat is theirs to see (a group's ceiling: everyone's there).
    const own = leastTrusted(principal.trust, ...(situation.ceiling ? [situation.ceiling] : []));
    this.#holds = mostTrusted(situation.holds ?? own, own);
  }

  /**
   * Starts a turn from its session's stored history: everything in the context shapes the turn,
   * so it is no more trusted than the least trusted message that wrote any of it (a group
   * ceiling then, another principal, a lowered user, a memory read in an earlier turn).
   */
  static fromHistory(
    principal: Principal,
    where: Omit<TurnSituation, "contributors">,
    history: readonly { trust: TrustLevel }[],
  ): TurnTaint {
    const trusts = history.map((m) => m.trust);
    // Each stored message may repeat anything readable at the trust it was written at.
    const holds = trusts.length ? mostTrusted(trusts[0], ...trusts) : undefined;
    return new TurnTaint(principal, {
      ...where,
      contributors: trusts,
      ...(holds ? { holds } : {}),
    });
  }

  /** The situation to authorize the turn's next action in (a snapshot). */
  get situation(): TurnSituation {
    return {
      channel: this.#channel,
      ceiling: this.#ceiling,
      contributors: [...this.#contributors],
      holds: this.#holds,
    };
  }

  /** The turn's effective trust now; messages persisted now carry it. */
  get trust(): TrustLevel {
    return effectiveTrust(this.principal, this.situation);
  }

  /** The memories that lowered this turn's trust, in the order they were read. */
  get loweredBy(): readonly MemoryProvenance[] {
    return this.#loweredBy;
  }

  /**
   * Takes in memories the turn just read: each one's trust becomes a contributor. Returns the
   * ones that lowered the turn (those at its new trust; empty when the trust did not change),
   * logged as a `turn.tainted` event.
   */
  read(memories: readonly MemoryProvenance[]): MemoryProvenance[] {
    const before = this.trust;
    for (const memory of memories) {
      this.#contributors.add(memory.trust);
      // And what it read is in its context from now on: a tier store's text is readable down
      // to its least trusted reader; a personal one's holds what its writing turn could read.
      const level = memory.store === "personal" ? memory.trust : leastTrustedReaderOf(memory.store);
      this.#holds = mostTrusted(this.#holds, level);
    }
    const after = this.trust;
    if (after === before) return [];
    const lowering = memories.filter((m) => m.trust === after);
    this.#loweredBy.push(...lowering);
    log.warn("turn.tainted {principal}: {from} → {to} by reading memory", {
      event: "turn.tainted",
      principal: this.principal.name,
      channel: this.#channel,
      from: before,
      to: after,
      memories: lowering.map(({ id, store, author, trust }) => ({ id, store, author, trust })),
    });
    return lowering;
  }

  /**
   * Takes in a file the turn read that `writers` may have written (file_provenance.ts): their
   * trust becomes a contributor, as a memory's does. Returns whether it lowered the turn.
   */
  readFile(path: string, writers: { name: string; trust: TrustLevel }): boolean {
    const before = this.trust;
    this.#contributors.add(writers.trust);
    const after = this.trust;
    if (after === before) return false;
    this.#filesBy.push({ path, ...writers });
    log.warn("turn.tainted {principal}: {from} → {to} by reading a file of {writers}", {
      event: "turn.tainted",
      principal: this.principal.name,
      channel: this.#channel,
      from: before,
      to: after,
      file: path,
      writers: writers.name,
    });
    return true;
  }

  /** Why memory or files lowered this turn, for the model and the user; null when nothing did. */
  explain(): string | null {
    if (this.#loweredBy.length === 0 && this.#filesBy.length === 0) return null;
    const shown = [
      ...this.#loweredBy.map((m) =>
        `memory #${m.id} (${m.store}, by ${m.author} at trust "${m.trust}")`
      ),
      ...this.#filesBy.map((f) =>
        `${f.path} (written in ${f.name}'s directory, trust "${f.trust}")`
      ),
    ];
    const listed = shown.slice(0, 5);
    const more = shown.length > listed.length ? ` and ${shown.length - listed.length} more` : "";
    return `this conversation runs at trust "${this.trust}" because it read ` +
      `${listed.join(", ")}${more}; what a less trusted person wrote cannot act with more trust`;
  }
}
