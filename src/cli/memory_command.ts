/**
 * `coop memory list [--user NAME] [--store S] [--json]` and `coop memory rm ID`: the owner's view
 * of every memory — the personal stores included — with who wrote it, where and at what trust.
 * @module
 */
import { MemoryDatabase, type MemoryHit } from "../state/memory_store.ts";
import { MEMORY_STORE_NAMES, type MemoryStoreName } from "../trust/trust_level.ts";
import { openOwnerState, parseStateArgs } from "./owner_state.ts";
import { writeStderr } from "./stderr.ts";
import { UsageError } from "./usage_error.ts";

const encoder = new TextEncoder();
const print = (text: string) => Deno.stdout.writeSync(encoder.encode(text));

/** One memory as `coop memory list --json` prints it. */
export interface MemoryListEntry {
  id: number;
  store: MemoryStoreName;
  /** Whose personal store holds it (`personal` only). */
  person?: string;
  author: string;
  channel: string;
  trust: string;
  /** ISO 8601. */
  createdAt: string;
  text: string;
}

function toEntry(hit: MemoryHit): MemoryListEntry {
  return {
    id: hit.id,
    store: hit.store,
    ...(hit.person === undefined ? {} : { person: hit.person }),
    author: hit.author,
    channel: hit.channel,
    trust: hit.trust,
    createdAt: new Date(hit.createdAt).toISOString(),
    text: hit.text,
  };
}

function renderLine(e: MemoryListEntry): string {
  const store = e.person === undefined ? e.store : `personal:${e.person}`;
  const when = e.createdAt.slice(0, 16).replace("T", " ");
  // One line per memory: a newline in the text would look like another entry.
  const text = e.text.replace(/\s*\n\s*/g, " ⏎ ");
  return `#${e.id} ${store} — ${e.author} via ${e.channel} (${e.trust}), ${when}: ${text}`;
}

function storeOption(value: string | undefined): MemoryStoreName | undefined {
  if (value === undefined) return undefined;
  if (!(MEMORY_STORE_NAMES as readonly string[]).includes(value)) {
    throw new UsageError(`--store must be one of ${MEMORY_STORE_NAMES.join(", ")}, not "${value}"`);
  }
  return value as MemoryStoreName;
}

async function listCommand(args: string[]): Promise<number> {
  const parsed = parseStateArgs(args, ["user", "store"]);
  if (parsed.positionals.length) {
    throw new UsageError(`unexpected argument "${parsed.positionals[0]}"`);
  }
  const store = storeOption(parsed.values.store);
  const state = await openOwnerState(parsed.config);
  if (!state) return 1;
  try {
    const entries = new MemoryDatabase(state.db).list({ store, user: parsed.values.user })
      .map(toEntry);
    if (parsed.json) print(JSON.stringify(entries, null, 2) + "\n");
    else if (entries.length === 0) print("no memories\n");
    else print(entries.map(renderLine).join("\n") + "\n");
    return 0;
  } finally {
    state.db.close();
  }
}

async function rmCommand(args: string[]): Promise<number> {
  const parsed = parseStateArgs(args);
  const [id, extra] = parsed.positionals;
  if (id === undefined || extra !== undefined || !/^[1-9]\d{0,15}$/.test(id)) {
    throw new UsageError("coop memory rm takes one memory id (the #N of `coop memory list`)");
  }
  const state = await openOwnerState(parsed.config);
  if (!state) return 1;
  try {
    const memories = new MemoryDatabase(state.db);
    const hit = memories.get(Number(id));
    if (!hit || !memories.remove(hit.id, "owner (coop memory rm)")) {
      writeStderr(`coop: there is no memory #${id} in ${state.config.agent.stateDir}\n`);
      return 1;
    }
    const entry = toEntry(hit);
    print(
      parsed.json ? JSON.stringify({ removed: entry }) + "\n" : `removed ${renderLine(entry)}\n`,
    );
    return 0;
  } finally {
    state.db.close();
  }
}

/**
 * `coop memory list | rm`: returns the exit status (1 when the config or the memory is missing).
 *
 * @example
 * ```ts
 * Deno.exit(await memoryCommand(["list", "--user", "bob", "--config", "coop.toml"]));
 * ```
 */
export function memoryCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === "list") return listCommand(rest);
  if (sub === "rm") return rmCommand(rest);
  throw new UsageError(
    sub === undefined ? "coop memory needs list or rm" : `unknown memory command "${sub}"`,
  );
}
