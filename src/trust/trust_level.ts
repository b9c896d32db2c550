/**
 * Trust levels, their order, and what each level may keep in memory.
 * @module
 */

/** Every trust level, most trusted first. */
export const TRUST_LEVELS = ["owner", "full", "inner", "familiar", "public"] as const;

/** How much Coop trusts a principal; `owner` is the most trusted, `public` the least. */
export type TrustLevel = (typeof TRUST_LEVELS)[number];

/** Memory stores, from most to least private. */
export const MEMORY_STORES = ["private", "shared", "social"] as const;

/** A memory store a principal may read or write. */
export type MemoryStore = (typeof MEMORY_STORES)[number];

/**
 * The personal store: one per principal, beside the trust tiers, read only by that person and
 * the owner (see `authorize()`).
 */
export const PERSONAL_STORE = "personal";

/** Every store a memory can live in: the trust tiers, then the personal store. */
export const MEMORY_STORE_NAMES = [...MEMORY_STORES, PERSONAL_STORE] as const;

/** The name of any memory store, the personal one included. */
export type MemoryStoreName = (typeof MEMORY_STORE_NAMES)[number];

/** Returns true when `value` names a trust level. */
export function isTrustLevel(value: unknown): value is TrustLevel {
  return typeof value === "string" && (TRUST_LEVELS as readonly string[]).includes(value);
}

/** Returns the rank of a level: 0 for `owner`, 4 for `public` (larger is less trusted). */
export function trustRank(level: TrustLevel): number {
  return TRUST_LEVELS.indexOf(level);
}

/** Returns true when `a` is at least as trusted as `b`. */
export function atLeast(a: TrustLevel, b: TrustLevel): boolean {
  return trustRank(a) <= trustRank(b);
}

/**
 * Returns the least trusted of the given levels; the effective trust of a turn.
 *
 * @example
 * ```ts
 * leastTrusted("owner", "familiar"); // "familiar"
 * ```
 */
export function leastTrusted(first: TrustLevel, ...rest: readonly TrustLevel[]): TrustLevel {
  let result = first;
  for (const level of rest) if (trustRank(level) > trustRank(result)) result = level;
  return result;
}

/** Returns the most trusted of the given levels. */
export function mostTrusted(first: TrustLevel, ...rest: readonly TrustLevel[]): TrustLevel {
  let result = first;
  for (const level of rest) if (trustRank(level) < trustRank(result)) result = level;
  return result;
}

const STORES_BY_TRUST: Readonly<Record<TrustLevel, readonly MemoryStore[]>> = {
  owner: ["private", "shared", "social"],
  full: ["private", "shared", "social"],
  inner: ["shared", "social"],
  familiar: ["social"],
  public: [],
};

/** Returns the memory stores a principal at `level` may read and write. */
export function memoryStoresFor(level: TrustLevel): readonly MemoryStore[] {
  return STORES_BY_TRUST[level];
}

/** Returns every trust level that may read `store`, most trusted first. */
export function memoryReadersOf(store: MemoryStore): readonly TrustLevel[] {
  return TRUST_LEVELS.filter((level) => STORES_BY_TRUST[level].includes(store));
}

/**
 * Returns the least trusted level that may read `store`: whoever reads a memory of it is at
 * least that trusted (`private` → `full`, `shared` → `inner`, `social` → `familiar`).
 */
export function leastTrustedReaderOf(store: MemoryStore): TrustLevel {
  const readers = memoryReadersOf(store);
  return leastTrusted(readers[0], ...readers);
}

/**
 * Returns the stores a turn at effective trust `level` may write: those it may read whose every
 * reader is at least as trusted as `level` (no write-down), or all of them for the owner.
 *
 * @example
 * ```ts
 * memoryWritableStoresFor("inner"); // ["shared"]: familiar contacts read "social"
 * ```
 */
export function memoryWritableStoresFor(level: TrustLevel): readonly MemoryStore[] {
  // The owner may decide to share anything; everyone else's turn content may hold what they
  // read from their most private store, so it may only go where nobody less trusted reads.
  if (level === "owner") return STORES_BY_TRUST.owner;
  return STORES_BY_TRUST[level].filter((store) =>
    memoryReadersOf(store).every((reader) => atLeast(reader, level))
  );
}

/** Name of the default principal for the terminal when nobody matches and the sandbox is on. */
export const TERMINAL_OWNER_NAME = "owner";
/** Name of the default principal for unmatched senders. */
export const PUBLIC_NAME = "public";
