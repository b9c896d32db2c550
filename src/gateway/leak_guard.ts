/**
 * Leak detection on the paths out of the gateway (docs/security.md, "Leak detection"): tool
 * results before the model reads them, tool arguments (memory writes, commands) before a tool
 * gets them, and replies before a channel sends them. Which turns are scanned: every turn of
 * anyone but the owner, wholly; the owner's as `[agent] owner_leak_scan` says (by default their
 * replies sent to any channel but the terminal). Each leak is replaced by a marker, logged as
 * `leak.detected` (never with its value) and counted for `/status`.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { CoopConfig } from "../config/config.ts";
import { decodeFileText, encodeFileText, fileEncoding } from "../leaks/file_text.ts";
import { type HeldSecret, LeakDetector } from "../leaks/leak_detector.ts";
import type { TrustLevel } from "../trust/trust_level.ts";
import type { TurnEvent } from "./turn_handler.ts";

const log = getLogger(["coop", "leaks"]);

/** A path out of the gateway that is scanned. */
export type LeakPath = "tool_result" | "tool_arguments" | "memory_write" | "reply" | "sent_file";

/** Where a text is going, for the decision and the log. */
export interface LeakScope {
  where: LeakPath;
  /** The principal whose turn it is. */
  principal: string;
  /** The turn's trust now (it only goes down during a turn). */
  trust: TrustLevel;
  channel: string;
  /** The tool, for tool paths. */
  tool?: string;
}

/** What `/status` shows: leaks replaced since the gateway started. */
export interface LeakStatus {
  detected: number;
  byKind: Record<string, number>;
  byPath: Record<string, number>;
}

/** Decides which texts are scanned, scans them, logs and counts what it replaced. */
export class LeakGuard {
  readonly #detector: LeakDetector;
  readonly #secrets: readonly HeldSecret[];
  readonly #ownerScan: CoopConfig["agent"]["ownerLeakScan"];
  readonly #status: LeakStatus;

  /**
   * A guard for the gateway holding `secrets`, with the owner's setting from `config`; `status`
   * continues the counts of the guard it replaces (a config reload).
   */
  constructor(
    config: Pick<CoopConfig, "agent">,
    secrets: readonly HeldSecret[],
    status: LeakStatus = { detected: 0, byKind: {}, byPath: {} },
  ) {
    this.#detector = new LeakDetector(secrets);
    this.#secrets = secrets;
    this.#ownerScan = config.agent.ownerLeakScan;
    this.#status = status;
  }

  /**
   * A guard for a reloaded config that goes on counting. It scans for the new config's `secrets`
   * and still for every one held before: the HTTP channel keeps serving the tokens it started
   * with until a restart, and a re-keyed secret may already be in a conversation.
   */
  reconfigured(config: Pick<CoopConfig, "agent">, secrets: readonly HeldSecret[]): LeakGuard {
    const values = new Set(secrets.map((s) => s.value));
    const kept = this.#secrets.filter((s) => !values.has(s.value));
    return new LeakGuard(config, [...secrets, ...kept], this.#status);
  }

  /** Whether a text on this path of this turn is scanned. */
  applies(scope: Omit<LeakScope, "principal">): boolean {
    if (scope.trust !== "owner" || this.#ownerScan === "everything") return true;
    // A file `send_file` sends goes to the chat with the reply: the same rule.
    return this.#ownerScan === "channel_replies" &&
      (scope.where === "reply" || scope.where === "sent_file") && scope.channel !== "terminal";
  }

  /**
   * `bytes` of a file going to a chat, with its leaks replaced when the scope is scanned. It is
   * read as UTF-8 (invalid sequences stand in as U+FFFD; ASCII secrets inside binary data still
   * match); unchanged bytes are returned as they were, a file with a leak as the redacted text.
   */
  redactFile(bytes: Uint8Array, scope: LeakScope): Uint8Array {
    if (!this.applies(scope)) return bytes;
    // Read as a person would (UTF-8, or UTF-16 by its mark or its zero bytes); written back the same.
    const encoding = fileEncoding(bytes);
    const text = decodeFileText(bytes, encoding);
    const redacted = this.redact(text, scope);
    return redacted === text ? bytes : encodeFileText(redacted, encoding);
  }

  /** `text` with its leaks replaced when the scope is scanned; each leak is logged and counted. */
  redact(text: string, scope: LeakScope): string {
    if (!this.applies(scope)) return text;
    const { text: redacted, leaks } = this.#detector.redact(text);
    for (const leak of leaks) {
      this.#status.detected++;
      this.#status.byKind[leak.kind] = (this.#status.byKind[leak.kind] ?? 0) + 1;
      this.#status.byPath[scope.where] = (this.#status.byPath[scope.where] ?? 0) + 1;
      log.warn("leak.detected {kind} ({form}) in {where} of {principal}; replaced by a marker", {
        event: "leak.detected",
        ...leak,
        ...scope,
      });
    }
    return redacted;
  }

  /** The model's tool arguments with every string in them redacted (when scanned). */
  redactArguments(args: unknown, scope: LeakScope): unknown {
    if (!this.applies(scope)) return args;
    const walk = (value: unknown): unknown => {
      if (typeof value === "string") return this.redact(value, scope);
      if (Array.isArray(value)) return value.map(walk);
      if (value !== null && typeof value === "object") {
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, walk(v)]));
      }
      return value;
    };
    return walk(args);
  }

  /**
   * A turn's event listener that holds streamed text while replies are scanned, and sends it
   * redacted as a whole once the model's response is complete (at its first tool call, or
   * `flush()` at the end of the turn): a secret split across stream chunks is still found.
   */
  streamed(
    onEvent: ((event: TurnEvent) => void) | undefined,
    scope: () => Omit<LeakScope, "where">,
  ): { onEvent?: (event: TurnEvent) => void; flush: () => void } {
    if (!onEvent) return { flush: () => {} };
    let held = "";
    const flush = () => {
      if (held === "") return;
      const text = this.redact(held, { ...scope(), where: "reply" });
      held = "";
      onEvent({ type: "text", text });
    };
    return {
      onEvent: (event) => {
        if (
          event.type === "text" && (held !== "" || this.applies({ ...scope(), where: "reply" }))
        ) {
          held += event.text;
          return;
        }
        flush();
        onEvent(event);
      },
      flush,
    };
  }

  /** Leaks replaced so far (a copy). */
  status(): LeakStatus {
    return structuredClone(this.#status);
  }
}
