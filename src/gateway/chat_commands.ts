/**
 * Commands the gateway answers itself, without a model call: `/status` (who you are; for the
 * owner also who else is known), `/clear` (ends this chat's session: `session_clear.ts`), `/approve CODE [--name NAME] [--trust LEVEL]` and `/deny CODE`
 * (the owner deciding pairing requests from a chat). Whether one may is `authorize()`'s call.
 * @module
 */
import type { LeakStatus } from "./leak_guard.ts";
import { parseArgs } from "node:util";
import type { CoopConfig, UserConfig } from "../config/config.ts";
import { CoopError } from "../errors/coop_error.ts";
import type { PairingStore } from "../state/pairing_store.ts";
import { authorize, type Situation } from "../trust/authorization.ts";
import { approvePairing, denyPairing } from "./pairing_approval.ts";
import type { Route } from "./router.ts";
import type { IncomingMessage } from "./turn_handler.ts";

/** A command the gateway answers itself. */
export type ChatCommand =
  | { name: "status" }
  | { name: "clear" }
  | { name: "approve"; code: string; personName?: string; trust?: string }
  | { name: "deny"; code: string }
  | { name: "mistake"; usage: string; problem: string };

const APPROVE_USAGE = "/approve CODE [--name NAME] [--trust LEVEL]";
const DENY_USAGE = "/deny CODE";

/** Reads a chat command from `text`, or null when the text is not one (it goes to the model). */
export function parseChatCommand(text: string): ChatCommand | null {
  const [word, ...args] = text.trim().split(/\s+/);
  // Telegram appends the bot's name in groups: `/status@coop_bot`.
  const name = word.replace(/@\S*$/, "");
  if (name === "/status" && args.length === 0) return { name: "status" };
  if (name === "/clear" && args.length === 0) return { name: "clear" };
  if (name !== "/approve" && name !== "/deny") return null;
  const usage = name === "/approve" ? APPROVE_USAGE : DENY_USAGE;
  try {
    const { values, positionals } = parseArgs({
      args,
      options: name === "/approve" ? { name: { type: "string" }, trust: { type: "string" } } : {},
      strict: true,
      allowPositionals: true,
    });
    if (positionals.length !== 1) {
      return { name: "mistake", usage, problem: "give exactly one code" };
    }
    if (name === "/deny") return { name: "deny", code: positionals[0] };
    const { name: personName, trust } = values as { name?: string; trust?: string };
    return {
      name: "approve",
      code: positionals[0],
      ...(personName === undefined ? {} : { personName }),
      ...(trust === undefined ? {} : { trust }),
    };
  } catch (error) {
    return { name: "mistake", usage, problem: (error as Error).message };
  }
}

/** What answering a command needs. */
export interface ChatCommandContext {
  /** Who sent it, and the group's ceiling. */
  route: Route;
  /** Where it came from. */
  message: Pick<IncomingMessage, "channel" | "sender" | "group">;
  /** Configured users and whether the sandbox is on. */
  config: Pick<CoopConfig, "users" | "sandbox">;
  pairing: PairingStore;
  /** Whether a name still holds someone's data (`leftoverData`); a derived name skips it. */
  hasData?: (name: string) => boolean;
  /** Leaks replaced since the gateway started (shown to the owner). */
  leaks?: LeakStatus;
  /** Milliseconds since the epoch; default now. */
  now?: number;
}

/**
 * Answers `command` (as the reply to send); never calls the model. `/clear` is not answered
 * here: ending a session is the gateway's (`Gateway.handle`, `session_clear.ts`).
 */
export function runChatCommand(
  command: Exclude<ChatCommand, { name: "clear" }>,
  context: ChatCommandContext,
): string {
  if (command.name === "mistake") return `usage: ${command.usage} (${command.problem})`;
  if (command.name === "status") return statusText(context);
  const now = context.now ?? Date.now();
  const op = command.name;
  const decision = authorize(context.route.principal, situation(context), { kind: "pairing", op });
  if (!decision.allowed) {
    return `Only the owner, in a direct chat, can ${op} pairing requests (trust here: ` +
      `${decision.effectiveTrust}).`;
  }
  try {
    if (command.name === "deny") {
      const request = denyPairing(context.pairing, command.code, now);
      return `Denied ${request.channel}:${request.sender}.`;
    }
    const person = approvePairing(context.pairing, context.config.users, command.code, {
      ...(command.personName === undefined ? {} : { name: command.personName }),
      ...(command.trust === undefined ? {} : { trust: command.trust }),
      ...(context.hasData ? { hasData: context.hasData } : {}),
    }, now);
    return `Approved ${person.channel}:${person.sender} as ${person.name} (trust ${person.trust}).`;
  } catch (error) {
    if (error instanceof CoopError && error.code.startsWith("pairing.")) return error.message;
    throw error;
  }
}

function situation(context: ChatCommandContext): Situation {
  return {
    channel: context.message.channel,
    ceiling: context.route.ceiling,
    contributors: [],
    sandboxEnabled: context.config.sandbox.enabled,
  };
}

/**
 * `/status`: who you are here; for the owner also the configured users, the paired people and
 * how many pairing requests wait.
 */
export function statusText(context: ChatCommandContext): string {
  const { principal, ceiling } = context.route;
  const { channel, sender, group } = context.message;
  const where = group === undefined ? "" : ` · group ${channel}:${group} (ceiling ${ceiling})`;
  const lines = [
    `user ${principal.name} · trust ${principal.trust} · ${channel}:${sender}${where}`,
  ];
  const decision = authorize(principal, situation(context), { kind: "pairing", op: "list" });
  if (!decision.allowed) return lines.join("\n");
  lines.push(...peopleLines(context.config.users, context.pairing, context.now ?? Date.now()));
  if (context.leaks) {
    const kinds = Object.entries(context.leaks.byKind).map(([kind, n]) => `${kind} ${n}`);
    lines.push(
      `leaks redacted since start: ${context.leaks.detected}` +
        (kinds.length ? ` (${kinds.join(", ")})` : ""),
    );
  }
  return lines.join("\n");
}

/** The configured users, the paired people and the pending requests, one line each kind. */
export function peopleLines(
  users: readonly UserConfig[],
  pairing: PairingStore,
  now: number,
): string[] {
  const configured = users.map((u) => `${u.name} (${u.trust})`).join(", ") || "none";
  const paired =
    pairing.people().map((p) =>
      `${p.name} (${p.trust}, ${p.channel}:${p.sender}${
        p.senderName === undefined ? "" : ` ${JSON.stringify(p.senderName)}`
      })`
    ).join(", ") || "none";
  const waiting = pairing.pending(now).filter((r) => !r.denied).length;
  return [
    `Configured users: ${configured}.`,
    `Paired people: ${paired}.`,
    `Pairing requests waiting: ${waiting} (coop pairing list).`,
  ];
}
