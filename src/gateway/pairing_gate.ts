/**
 * The pairing gate: an unknown sender in a direct chat on a messenger (Telegram, Signal) gets one
 * short reply with a pairing code and no model call. While the request waits, no new code is
 * made; the code is sent again at most once per `PAIRING_RESEND_INTERVAL_MS`, and every other
 * message is met with silence. Requests expire (`[pairing] code_ttl`) and are capped
 * (`[pairing] max_pending`: past it a newcomer gets nothing, and the log says so). A denied
 * request silences its sender until it would have expired.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import type { PairingSettings } from "../config/pairing_settings.ts";
import { TurnRefusedError } from "../errors/turn_refused.ts";
import { formatDuration } from "../sandbox/duration.ts";
import { newPairingCode } from "../state/pairing_code.ts";
import type { PairingRequest, PairingStore } from "../state/pairing_store.ts";
import type { Route } from "./router.ts";
import type { IncomingMessage, TurnOutcome } from "./turn_handler.ts";

const log = getLogger(["coop", "pairing"]);

/** Channels whose unknown direct senders are paired (not http, terminal or cron). */
export const PAIRING_CHANNELS: readonly string[] = ["telegram", "signal"];

/** A waiting requester hears of their code again at most this often (10 minutes). */
export const PAIRING_RESEND_INTERVAL_MS = 10 * 60_000;

/** A turn declined because its sender is unknown: `reply` carries their pairing code. */
export class PairingRequiredError extends TurnRefusedError {
  constructor(reply: string) {
    // The message is what gets logged: it never holds the code.
    super(
      "gateway.pairing_required",
      "the sender is unknown; they were sent a pairing code for the owner to approve",
      { httpStatus: 403, reply },
    );
    this.name = "PairingRequiredError";
  }
}

/** What a message gets from the gate: nothing (silence), or it is refused with a code. */
const SILENT: TurnOutcome = { reply: "", silent: true, session: "", tools: [] };

/** Decides and answers messages of unknown senders in direct messenger chats. */
export class PairingGate {
  readonly #store: PairingStore;
  readonly #settings: () => PairingSettings;
  readonly #now: () => number;
  /** Codes this process issued, by request id: only their hashes are on disk. */
  readonly #codes = new Map<number, string>();

  constructor(store: PairingStore, settings: () => PairingSettings, now: () => number = Date.now) {
    this.#store = store;
    this.#settings = settings;
    this.#now = now;
  }

  /** Whether `message` must go through pairing instead of a turn. */
  applies(route: Route, message: IncomingMessage): boolean {
    return this.#settings().enabled && message.group === undefined &&
      route.reason === "unmatched_public" && PAIRING_CHANNELS.includes(message.channel);
  }

  /**
   * Answers an unknown sender: throws `PairingRequiredError` with a new code, or with the pending
   * one when it was last sent long enough ago; otherwise returns a silent outcome.
   */
  answer(message: IncomingMessage): TurnOutcome {
    const now = this.#now();
    const settings = this.#settings();
    for (const gone of this.#store.expire(now)) {
      this.#codes.delete(gone.id);
      log.info("pairing.expired {channel}:{sender}", { event: "pairing.expired", ...who(gone) });
    }
    if (this.#codes.size > settings.maxPending) {
      // Approved or denied elsewhere (`coop pairing`): only waiting requests keep their code.
      const waiting = new Set(this.#store.pending(now).map((r) => r.id));
      for (const id of this.#codes.keys()) if (!waiting.has(id)) this.#codes.delete(id);
    }
    const pending = this.#store.pendingFor(message.channel, message.sender, now);
    if (pending) return this.#again(pending, now);
    const code = newPairingCode();
    const request = this.#store.create(
      {
        channel: message.channel,
        sender: message.sender,
        aliases: message.senderAliases ?? [],
        ...(message.senderName === undefined ? {} : { senderName: message.senderName }),
      },
      code,
      { now, expiresAt: now + settings.codeTtlMs },
      settings.maxPending,
    );
    if (!request) {
      log.warn("pairing.capped {channel}:{sender}: {max} requests already wait", {
        event: "pairing.capped",
        channel: message.channel,
        sender: message.sender,
        max: settings.maxPending,
        setting: "[pairing] max_pending",
      });
      return SILENT;
    }
    this.#codes.set(request.id, code);
    log.info("pairing.requested {channel}:{sender}", {
      event: "pairing.requested",
      ...who(request),
      expiresAt: new Date(request.expiresAt).toISOString(),
    });
    throw new PairingRequiredError(
      `Hello! I don't know you yet. To talk with me, ask my owner to approve this code: ${code} ` +
        `(valid for ${formatDuration(settings.codeTtlMs)}).`,
    );
  }

  #again(request: PairingRequest, now: number): TurnOutcome {
    if (request.denied || now - request.lastSentAt < PAIRING_RESEND_INTERVAL_MS) {
      log.debug("pairing.quiet {channel}:{sender}", { event: "pairing.quiet", ...who(request) });
      return SILENT;
    }
    this.#store.markSent(request.id, now);
    log.info("pairing.resent {channel}:{sender}", { event: "pairing.resent", ...who(request) });
    const code = this.#codes.get(request.id);
    const until = new Date(request.expiresAt).toISOString().slice(0, 16).replace("T", " ");
    throw new PairingRequiredError(
      code === undefined
        // Issued before a restart: only its hash is left.
        ? `Your pairing request is still waiting for my owner: give them the code I sent you ` +
          `earlier (valid until ${until} UTC).`
        : `Your pairing request is still waiting for my owner: ask them to approve ${code} ` +
          `(valid until ${until} UTC).`,
    );
  }
}

function who(request: PairingRequest): Record<string, unknown> {
  return { channel: request.channel, sender: request.sender, senderName: request.senderName };
}
