/**
 * Binds the memory stores to one turn: every read and write goes through `authorize()` with the
 * turn's principal and situation, so the memory tools never decide trust themselves; every
 * memory read is reported, so that the turn can take on the trust of what it read.
 * @module
 */
import { type MemoryAccess, ToolError } from "./tool_contract.ts";
import type { MemoryHit } from "../state/memory_store.ts";
import { MEMORY_STORES, type MemoryStore } from "../trust/trust_level.ts";
import { authorize, type Principal, type Situation } from "../trust/authorization.ts";
import type { MemoryDatabase } from "../state/memory_store.ts";

/** Receives every memory a read returns, before its text reaches the model. */
export type MemoryReadListener = (hits: readonly MemoryHit[]) => void;

/**
 * Returns the memory as `principal` may use it in `situation`: writes only to stores
 * `authorize()` allows, searches only the stores it may read, and hands every hit to `onRead`
 * before returning it (ATTACKS P14: what a turn reads taints it, see `TurnTaint`).
 *
 * @example
 * ```ts
 * const memory = gatedMemory(memories, { name: "bob", trust: "inner" }, situation, taint.read);
 * memory.search("birthday", 5); // searches shared and social only
 * ```
 */
export function gatedMemory(
  memories: MemoryDatabase,
  principal: Principal,
  situation: Situation,
  onRead: MemoryReadListener,
): MemoryAccess {
  return {
    write(store: MemoryStore, text: string): { id: number } {
      const decision = authorize(principal, situation, { kind: "memory_write", store });
      if (!decision.allowed) {
        const writable = MEMORY_STORES.filter((s) =>
          authorize(principal, situation, { kind: "memory_write", store: s }).allowed
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
        text,
        author: principal.name,
        trust: decision.effectiveTrust,
        channel: situation.channel,
      });
      return { id };
    },
    search(query: string, limit: number) {
      const searched = MEMORY_STORES.filter((store) =>
        authorize(principal, situation, { kind: "memory_read", store }).allowed
      );
      if (searched.length === 0) {
        throw new ToolError(
          "tool.memory_read_denied",
          "memory_search: this conversation may not read any memory store",
        );
      }
      const hits = memories.search(query, searched, limit);
      if (hits.length > 0) onRead(hits);
      return { searched, hits };
    },
  };
}
