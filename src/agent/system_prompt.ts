/**
 * The system prompt: a built-in default, replaced by the workspace's `SYSTEM.md` when present,
 * followed by `SOUL.md` (persona) and `AGENTS.md` (standing instructions) when present.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

const log = getLogger(["coop", "agent"]);

/** Prompt files read from the root of the agent workspace, in this order. */
export const PROMPT_FILES = ["SYSTEM.md", "SOUL.md", "AGENTS.md"] as const;

/** Bytes read from each prompt file; the rest is dropped with a warning. */
export const MAX_PROMPT_FILE_BYTES = 64 * 1024;

/** The prompt used when the workspace has no `SYSTEM.md`. */
export const DEFAULT_SYSTEM_PROMPT =
  "You are Coop, a personal AI agent. Several people may talk to you through different " +
  "channels; each message comes from one of them. Be concise and accurate. Use the tools you " +
  "are given to act in the user's workspace; do not claim to have done something a tool did " +
  "not report. Tool output may be truncated (marked) and tools may be refused: report that " +
  "plainly instead of working around it.";

/**
 * What a prompt file held when its identity (inode, size, change times) was `key`, when it was
 * read (`performance.now()`), and whether that identity can be trusted from now on.
 */
const promptCache = new Map<
  string,
  { key: string; text: string | null; readAt: number; trusted: boolean }
>();
/**
 * File timestamps come from the kernel's coarse clock, which can lag the real time by a tick,
 * and by much more on a loaded virtual machine whose ticks are late: a rewrite of the same size
 * can keep every field of the key. So an identity is trusted only once two reads this far apart
 * (monotonic time) found it unchanged: a later write then lands on a clock that has moved.
 * Until then the file is read on every call.
 */
const TIMESTAMP_SLACK_MS = 100;
/** Prompt files remembered at once (three per agent workspace). */
const PROMPT_CACHE_ENTRIES = 64;

/**
 * A prompt file's text. Every turn asks, so the file is read again only when a synchronous
 * `stat` (a few µs) shows it changed: three reads through the runtime's blocking thread pool
 * per turn cost ≈ 0.8 ms under concurrency (docs/performance.md, session 12).
 */
function readPromptFile(path: string): string | null {
  let key: string;
  // Usually some of the files are absent. `existsSync` says so in about 1 µs; a `stat`, even with
  // `throwIfNoEntry: false`, builds a NotFound error with its stack inside the runtime (≈ 9 µs,
  // ≈ 40 µs per turn and file under load: docs/performance.md, session 17).
  if (!existsSync(path)) {
    promptCache.delete(path);
    return null;
  }
  try {
    // Removed since `existsSync`: absent all the same.
    const stat = statSync(path, { bigint: true, throwIfNoEntry: false });
    if (!stat) {
      promptCache.delete(path);
      return null;
    }
    key = `${stat.ino}:${stat.size}:${stat.mtimeNs}:${stat.ctimeNs}`;
  } catch (error) {
    promptCache.delete(path);
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    log.warn("agent.prompt_file_unreadable {path}: {error}", { path, error: String(error) });
    return null;
  }
  const cached = promptCache.get(path);
  if (cached?.trusted && cached.key === key) return cached.text;
  const readAt = performance.now();
  const trusted = cached?.key === key && readAt - cached.readAt > TIMESTAMP_SLACK_MS;
  const text = readPromptText(path);
  if (promptCache.size >= PROMPT_CACHE_ENTRIES) promptCache.clear();
  // An unchanged identity keeps its first read time: trust comes from the span since then.
  promptCache.set(path, {
    key,
    text,
    readAt: cached?.key === key ? cached.readAt : readAt,
    trusted,
  });
  return text;
}

function readPromptText(path: string): string | null {
  let bytes: Uint8Array;
  try {
    bytes = readFileSync(path);
  } catch (error) {
    log.warn("agent.prompt_file_unreadable {path}: {error}", { path, error: String(error) });
    return null;
  }
  if (bytes.length > MAX_PROMPT_FILE_BYTES) {
    log.warn("agent.prompt_file_truncated {path}: {bytes} bytes, keeping {max}", {
      path,
      bytes: bytes.length,
      max: MAX_PROMPT_FILE_BYTES,
    });
    bytes = bytes.subarray(0, MAX_PROMPT_FILE_BYTES);
  }
  return new TextDecoder().decode(bytes).trim();
}

/**
 * Builds the system prompt from the agent workspace (`[agent] workspace`). The files sit at the
 * workspace root, which only the owner can write: non-owners see their own subdirectory.
 */
export function loadSystemPrompt(workspace: string): Promise<string> {
  const [system, soul, agents] = PROMPT_FILES.map((file) => readPromptFile(join(workspace, file)));
  const parts = [system || DEFAULT_SYSTEM_PROMPT];
  if (soul) parts.push(soul);
  if (agents) parts.push(agents);
  return Promise.resolve(parts.join("\n\n"));
}

/** Who the turn is with, as a paragraph appended to the system prompt. */
export interface TurnContext {
  /** The user's name, or `public` for an unknown sender. */
  user: string;
  /** The effective trust of the turn. */
  trust: string;
  /** The channel, e.g. `http`. */
  channel: string;
  /** Where the user's tools see their files (`/work` in the sandbox). */
  workspace: string | null;
  /** In a group chat: its address, e.g. `telegram:-1001234`. */
  group?: string;
}

/** Appends who is speaking and where tools run, so the model addresses the right person. */
export function withTurnContext(system: string, context: TurnContext): string {
  const where = context.workspace === null
    ? "You have no tools in this conversation."
    : `Their tools work in ${context.workspace}.`;
  const group = context.group === undefined ? "" : ` in the group chat ${context.group}, where ` +
    "each message starts with a line naming who wrote it and their trust";
  return `${system}\n\nYou are talking with ${context.user} (trust: ${context.trust}) via ` +
    `${context.channel}${group}. ${where}`;
}
