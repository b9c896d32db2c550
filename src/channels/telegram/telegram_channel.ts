/**
 * The Telegram channel: long polling with `getUpdates`; every update is written to the state
 * database's inbox (with the next offset) before Telegram is told it arrived, answered in its
 * chat's order (chats at the same time), and forgotten once its reply was sent — so a restart
 * answers what was pending exactly once and loses nothing.
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import type { Update, UserFromGetMe } from "grammy/types";
import { getLogger } from "@logtape/logtape";
import { abortableSleep } from "../../sandbox/abortable_wait.ts";
import { errorMessage } from "../../errors/coop_error.ts";
import type { TurnHandler } from "../../gateway/turn_handler.ts";
import { ChannelInbox, type InboxItem } from "../../state/channel_inbox.ts";
import { answerInChat, type ChatSender } from "../chat_answer.ts";
import { ChatQueues } from "../chat_queues.ts";
import {
  backoffDelay,
  type BackoffPolicy,
  ChannelDeliveryError,
  DEFAULT_BACKOFF,
  deliverWithRetry,
} from "../delivery_retry.ts";
import { splitMessage } from "../message_split.ts";
import { TelegramBotApi } from "./bot_api.ts";
import { readTelegramText, TELEGRAM, updateChat } from "./telegram_update.ts";

const log = getLogger(["coop", "channel", "telegram"]);

/** Telegram's longest message, in UTF-16 code units. */
export const TELEGRAM_MESSAGE_LIMIT = 4096;

/** What the channel needs. */
export interface TelegramChannelOptions {
  /** The bot token (from `bot_token_env`); never logged. */
  token: string;
  /** `api_base_url`. */
  apiRoot: string;
  /** The state database (its inbox and offset). */
  db: DatabaseSync;
  /** The gateway's turn handler. */
  handle: TurnHandler;
  /** Long-poll wait in seconds (default 30). */
  pollTimeoutSeconds?: number;
  /** How often "typing…" is renewed while a turn runs (default 4 s; it lasts about 5). */
  typingEveryMs?: number;
  /** Backoff of polls and deliveries. */
  backoff?: BackoffPolicy;
}

/**
 * Serves one bot until `stop()`.
 *
 * @example
 * ```ts
 * const channel = new TelegramChannel({ token, apiRoot, db, handle: gateway.handle });
 * await channel.start();
 * await channel.stop();
 * ```
 */
export class TelegramChannel {
  readonly #options: TelegramChannelOptions;
  readonly #api: TelegramBotApi;
  readonly #queues = new ChatQueues();
  /** Stops polling. */
  readonly #polling = new AbortController();
  /** Cancels turns and deliveries (shutdown, not a reload). */
  readonly #cancel = new AbortController();
  /** Cancels deliveries: at shutdown, after a grace period for replies already being sent. */
  #loop: Promise<void> | undefined;

  constructor(options: TelegramChannelOptions) {
    this.#options = options;
    this.#api = new TelegramBotApi(options.token, options.apiRoot);
  }

  /**
   * Learns who the bot is (`getMe`, retried while Telegram is unreachable), answers what the
   * inbox still holds, and starts polling. Rejects when the token is refused.
   */
  async start(): Promise<UserFromGetMe> {
    const bot = await deliverWithRetry(
      { channel: TELEGRAM, method: "getMe" },
      () => this.#api.getMe(this.#polling.signal),
      { signal: this.#polling.signal, backoff: this.#options.backoff },
    );
    const inbox = new ChannelInbox(this.#options.db, TELEGRAM, String(bot.id));
    const pending = inbox.pending();
    log.info("telegram.started @{username}", {
      event: "telegram.started",
      username: bot.username,
      botId: bot.id,
      pending: pending.length,
    });
    for (const item of pending) this.#dispatch(inbox, bot, item);
    this.#loop = this.#poll(inbox, bot);
    return bot;
  }

  /**
   * Stops polling and waits for what was received to be answered; with `cancel`, turns and
   * deliveries are cancelled too and what they had not answered stays in the inbox.
   */
  async stop(options: { cancel?: boolean } = {}): Promise<void> {
    this.#polling.abort();
    if (options.cancel) this.#cancel.abort();
    await this.#loop;
    await this.#queues.drain(options);
  }

  async #poll(inbox: ChannelInbox, bot: UserFromGetMe): Promise<void> {
    const signal = this.#polling.signal;
    const timeout = this.#options.pollTimeoutSeconds ?? 30;
    let failures = 0;
    while (!signal.aborted) {
      let updates: Update[];
      try {
        updates = await this.#api.getUpdates(Number(inbox.cursor() ?? 0), timeout, signal);
        failures = 0;
      } catch (error) {
        if (signal.aborted) break;
        const retryAfter = error instanceof ChannelDeliveryError ? error.retryAfterMs : undefined;
        const delayMs = retryAfter ??
          backoffDelay(failures++, this.#options.backoff ?? DEFAULT_BACKOFF);
        log.warning("telegram.poll_failed, retrying in {delayMs} ms: {reason}", {
          event: "telegram.poll_failed",
          delayMs,
          reason: errorMessage(error),
        });
        await abortableSleep(delayMs, signal).catch(() => {});
        continue;
      }
      if (updates.length === 0) continue;
      // Recorded with the next offset before that offset tells Telegram they arrived.
      const fresh = inbox.receive(
        updates.map((u) => ({ item: String(u.update_id), chat: updateChat(u), payload: u })),
        String(Math.max(...updates.map((u) => u.update_id)) + 1),
      );
      for (const item of fresh) this.#dispatch(inbox, bot, item);
    }
  }

  #dispatch(inbox: ChannelInbox, bot: UserFromGetMe, item: InboxItem): void {
    this.#queues.run(item.chat, async () => {
      const read = readTelegramText(item.payload as Update, bot);
      if (read) {
        const chatId = read.message.chat.id;
        const replyTo = read.incoming.group === undefined ? undefined : read.message.message_id;
        const answer = await answerInChat(
          this.#options.handle,
          read.incoming,
          this.#chat(chatId, replyTo),
          {
            typingEveryMs: this.#options.typingEveryMs ?? 4000,
            signal: this.#cancel.signal,
            deliverySignal: this.#queues.deliverySignal,
          },
        );
        if (answer === "interrupted") return;
      }
      inbox.done(item.seq);
    });
  }

  #chat(chatId: number, replyTo: number | undefined): ChatSender {
    const signal = this.#queues.deliverySignal;
    const retry = { signal, backoff: this.#options.backoff };
    return {
      typing: () => this.#api.sendTyping(chatId, signal),
      text: async (text) => {
        // In order, each piece delivered (retried) before the next; the first answers the
        // group message it replies to.
        const pieces = splitMessage(text, TELEGRAM_MESSAGE_LIMIT);
        for (const [i, piece] of pieces.entries()) {
          await deliverWithRetry(
            { channel: TELEGRAM, method: "sendMessage" },
            () => this.#api.sendMessage(chatId, piece, i === 0 ? replyTo : undefined, signal),
            retry,
          );
        }
      },
      file: async (file) => {
        await deliverWithRetry(
          { channel: TELEGRAM, method: "sendDocument" },
          () => this.#api.sendDocument(chatId, file, signal),
          retry,
        );
      },
    };
  }
}
