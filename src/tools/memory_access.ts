/**
 * Binds the memory stores to one turn: every read, write and forget goes through `authorize()`
 * with the turn's principal and situation, so the memory tools never decide trust themselves;
 * every memory read is reported, so that the turn can take on the trust of what it read.
 * @module
 */
import { type MemoryAccess, ToolError } from "./tool_contract.ts";
import type { MemoryDatabase, MemoryHit } from "../state/memory_store.ts";
import { MEMORY_STORE_NAMES, MEMORY_STORES, type MemoryStoreName } from "../trust/trust_level.ts";
import { type Action, authorize, type Principal, type Situation } from "../trust/authorization.ts";

/** Receives every memory a read returns, before its text reaches the model. */
export type MemoryReadListener = (hits: readonly MemoryHit[]) => void;

/**
 * Returns the memory as `principal` may use it in `situation`: writes only to stores
 * `authorize()` allows (a `personal` write goes to the principal's own store), searches only the
 * stores it may read, gets and forgets only entries it allows, and hands every hit to `onRead`
 * before returning it (ATTACKS P14: what a turn reads taints it, see `TurnTaint`).
 *
 * @example
 * ```ts
 * const memory = gatedMemory(memories, { name: "bob", trust: "inner" }, situation, taint.read);
 * memory.search("birthday", 5); // searches shared, social and bob's personal store
 * ```
 */
export function gatedMemory(
  memories: MemoryDatabase,
  principal: Principal,
  situation: Situation,
  onRead: MemoryReadListener,
): MemoryAccess {
  const allowed = (action: Action) => authorize(principal, situation, action).allowed;
  const own = principal.name;
  /** The same answer for "no such memory" and "not yours to read": ids reveal nothing. */
  const unknown = (tool: string, id: number) =>
    new ToolError(
      "tool.memory_not_found",
      `${tool}: there is no memory #${id} this conversation may read`,
    );
  return {
    write(store: MemoryStoreName, text: string): { id: number } {
      const person = store === "personal" ? own : undefined;
      const decision = authorize(principal, situation, { kind: "memory_write", store, person });
      if (!decision.allowed) {
        const writable = MEMORY_STORE_NAMES.filter((s) =>
          allowed({ kind: "memory_write", store: s, person: s === "personal" ? own : undefined })
        );
        throw new ToolError(
          "tool.memory_write_denied",
          `memory_write: this conversation (trust "${decision.effectiveTrust}") may not write ` +
            `to "${store}" (rule ${decision.rule}); it may write to: ${
              writable.join(", ") || "nothing"
            }`,
        );
      }
      const id = memories.write({
        store,
        person,
        text,
        author: own,
        trust: decision.effectiveTrust,
        channel: situation.channel,
      });
      return { id };
    },
    search(query: string, limit: number) {
      const tiers = MEMORY_STORES.filter((store) => allowed({ kind: "memory_read", store }));
      // A search covers the principal's own personal store only; the owner reads someone
      // else's by id or with `coop memory list`, never mixed into every answer.
      const personal = allowed({ kind: "memory_read", store: "personal", person: own });
      const searched: MemoryStoreName[] = personal ? [...tiers, "personal"] : tiers;
      if (searched.length === 0) {
        throw new ToolError(
          "tool.memory_read_denied",
          "memory_search: this conversation may not read any memory store",
        );
      }
      const hits = memories.search(query, tiers, limit, personal ? [own] : []);
      if (hits.length > 0) onRead(hits);
      return { searched, hits };
    },
    get(id: number): MemoryHit {
      const hit = memories.get(id);
      if (!hit || !allowed({ kind: "memory_read", store: hit.store, person: hit.person })) {
        throw unknown("memory_get", id);
      }
      onRead([hit]);
      return hit;
    },
    forget(id: number): void {
      const hit = memories.get(id);
      if (!hit || !allowed({ kind: "memory_read", store: hit.store, person: hit.person })) {
        throw unknown("memory_forget", id);
      }
      const decision = authorize(principal, situation, { kind: "memory_forget", entry: hit });
      if (!decision.allowed) {
        throw new ToolError(
          "tool.memory_forget_denied",
          `memory_forget: memory #${id} may not be forgotten here (rule ${decision.rule}): ` +
            "only its author may, from a conversation at least as trusted as the one that wrote it",
        );
      }
      memories.remove(id, own);
    },
  };
}
