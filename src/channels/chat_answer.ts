/**
 * Answers one messenger message: shows "typing…" while the turn runs, sends the reply (nothing
 * when the turn is silent) and then its files; a refused turn gets the refusal's own sentence,
 * any other failure one short apology (the reason goes to the log, not to the chat).
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { CoopError, errorMessage } from "../errors/coop_error.ts";
import { TurnRefusedError } from "../errors/turn_refused.ts";
import type { IncomingMessage, OutgoingFile, TurnHandler } from "../gateway/turn_handler.ts";

const log = getLogger(["coop", "channel"]);

/** How long a stopping channel lets replies already being sent finish. */
export const DELIVERY_GRACE_MS = 3000;

/** What a chat is told when a turn failed for a reason of ours. */
export const CHAT_APOLOGY = "Sorry, something went wrong on my side. Please try again later.";

/** How a channel talks to one chat (each call retries by itself; see `deliverWithRetry`). */
export interface ChatSender {
  /** Shows "typing…" once; the indicator fades by itself after a few seconds. */
  typing(): Promise<void>;
  /** Sends one reply (the channel splits it if it is too long). */
  text(text: string): Promise<void>;
  /** Sends one file. */
  file(file: OutgoingFile): Promise<void>;
  /** Ends "typing…" where the service has a way to (Signal); optional. */
  typingDone?(): Promise<void>;
}

/** How `answerInChat` went. */
export type ChatAnswer = "answered" | "interrupted";

/**
 * Runs the turn for `message` and delivers its outcome to `chat`. Returns `interrupted` (and
 * sends nothing more) when the turn (`signal`) or a delivery (`deliverySignal`, aborted later:
 * a reply being sent at shutdown gets a grace period) was cancelled because the channel or the
 * gateway is stopping: the message stays pending and is answered after the restart.
 */
export async function answerInChat(
  handle: TurnHandler,
  message: IncomingMessage,
  chat: ChatSender,
  options: { typingEveryMs: number; signal: AbortSignal; deliverySignal: AbortSignal },
): Promise<ChatAnswer> {
  const fields = { event: "channel.turn_failed", channel: message.channel, sender: message.sender };
  // The identity to put in a match pattern, for the owner setting people up (docs/channels.md).
  log.info("channel.message from {from}{inGroup}", {
    event: "channel.message",
    from: `${message.channel}:${message.sender}`,
    inGroup: message.group === undefined ? "" : ` in ${message.channel}:${message.group}`,
    aliases: message.senderAliases,
    addressed: message.addressed,
  });
  let typing = true;
  const showTyping = () => {
    if (!typing) return;
    chat.typing().catch((error) =>
      log.debug("channel.typing_failed {reason}", { ...fields, reason: errorMessage(error) })
    );
  };
  showTyping();
  const timer = setInterval(showTyping, options.typingEveryMs);
  let reply: string | null;
  let files: OutgoingFile[] = [];
  try {
    // A handler that does not end when cancelled must not hold the channel's stop.
    const outcome = await Promise.race([
      handle({ ...message, signal: options.signal }),
      aborted(options.signal),
    ]);
    reply = outcome.silent ? null : outcome.reply;
    files = outcome.silent ? [] : outcome.files ?? [];
  } catch (error) {
    if (isStopping(error, options.signal)) return "interrupted";
    if (error instanceof TurnRefusedError) {
      reply = error.reply;
    } else {
      log.warning("channel.turn_failed {channel}: {reason}", {
        ...fields,
        code: error instanceof CoopError ? error.code : undefined,
        reason: errorMessage(error),
      });
      reply = CHAT_APOLOGY;
    }
  } finally {
    typing = false;
    clearInterval(timer);
  }
  try {
    await chat.typingDone?.().catch(() => {});
    if (reply !== null && reply.trim() !== "") await chat.text(reply);
    for (const file of files) await chat.file(file);
  } catch (error) {
    if (options.deliverySignal.aborted) return "interrupted";
    // Retrying cannot change this refusal (the chat is gone, the bot was blocked …).
    log.error("channel.delivery_failed {channel}: {reason}", {
      ...fields,
      event: "channel.delivery_failed",
      reason: errorMessage(error),
    });
  }
  return "answered";
}

function aborted(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

function isStopping(error: unknown, signal: AbortSignal): boolean {
  return signal.aborted ||
    (error instanceof CoopError && error.code === "gateway.shutdown");
}
