/**
 * The Bot API methods the Telegram channel calls, through grammY's `Api` client (custom API
 * root for tests). Every failure becomes a `ChannelDeliveryError` whose message names the
 * method and the reason and never the token: grammY's own errors and the `fetch` errors they
 * wrap quote the request URL, which holds the token, so none of them is passed on — not even
 * as a `cause`.
 * @module
 */
import { Api, GrammyError, HttpError, InputFile } from "grammy";
import type { Message, Update, UserFromGetMe } from "grammy/types";
import { errorMessage } from "../../errors/coop_error.ts";
import type { OutgoingFile } from "../../gateway/turn_handler.ts";
import { ChannelDeliveryError } from "../delivery_retry.ts";
import { redactSecrets } from "../../errors/secret_redaction.ts";

/**
 * grammY types its signals with the `abort-controller` shim of its Node build; the web build it
 * runs as here uses the platform's own `AbortSignal`, which is what we pass.
 */
type ApiSignal = Parameters<Api["getMe"]>[0];
const apiSignal = (signal: AbortSignal | undefined) => signal as unknown as ApiSignal;

/** The public Bot API. */
export const DEFAULT_TELEGRAM_API = "https://api.telegram.org";

/** The Bot API as the channel uses it; `signal` cancels a call (long polls included). */
export class TelegramBotApi {
  readonly #api: Api;
  readonly #token: string;

  /** `apiRoot` without a trailing slash, e.g. `https://api.telegram.org`. */
  constructor(token: string, apiRoot: string = DEFAULT_TELEGRAM_API) {
    this.#token = token;
    this.#api = new Api(token, { apiRoot: apiRoot.replace(/\/+$/, "") });
  }

  /** The bot itself (id and username). */
  getMe(signal?: AbortSignal): Promise<UserFromGetMe> {
    return this.#call("getMe", () => this.#api.getMe(apiSignal(signal)));
  }

  /** Updates from `offset` on, waiting up to `timeoutSeconds` for the first (long polling). */
  getUpdates(offset: number, timeoutSeconds: number, signal?: AbortSignal): Promise<Update[]> {
    return this.#call("getUpdates", () =>
      this.#api.getUpdates(
        { offset, timeout: timeoutSeconds, allowed_updates: ["message"] },
        apiSignal(signal),
      ));
  }

  /** Sends plain text (no parse mode: nothing the model writes is taken as markup). */
  sendMessage(
    chatId: number,
    text: string,
    replyTo: number | undefined,
    signal?: AbortSignal,
  ): Promise<Message> {
    const other = replyTo === undefined
      ? {}
      : { reply_parameters: { message_id: replyTo, allow_sending_without_reply: true } };
    return this.#call(
      "sendMessage",
      () => this.#api.sendMessage(chatId, text, other, apiSignal(signal)),
    );
  }

  /** Shows "typing…" in the chat for about five seconds. */
  async sendTyping(chatId: number, signal?: AbortSignal): Promise<void> {
    await this.#call(
      "sendChatAction",
      () => this.#api.sendChatAction(chatId, "typing", {}, apiSignal(signal)),
    );
  }

  /** Sends a file as a document (multipart upload). */
  sendDocument(chatId: number, file: OutgoingFile, signal?: AbortSignal): Promise<Message> {
    return this.#call(
      "sendDocument",
      () =>
        this.#api.sendDocument(chatId, new InputFile(file.bytes, file.name), {}, apiSignal(signal)),
    );
  }

  async #call<T>(method: string, call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      throw this.#failure(method, error);
    }
  }

  #failure(method: string, error: unknown): ChannelDeliveryError {
    const clean = (text: string) => redactSecrets(text, [this.#token]);
    if (error instanceof GrammyError) {
      const retryAfter = error.parameters.retry_after;
      return new ChannelDeliveryError(
        error.error_code === 401 ? "telegram.unauthorized" : "telegram.api_error",
        clean(`Telegram ${method}: ${error.error_code} ${error.description}`),
        {
          retryable: error.error_code === 429 || error.error_code >= 500,
          ...(retryAfter === undefined ? {} : { retryAfterMs: retryAfter * 1000 }),
        },
      );
    }
    if (error instanceof HttpError) {
      // The wrapped error: fetch's (its message quotes the URL) or a body that was not JSON —
      // what a proxy in front of the Bot API answers when it is down (an HTML 502 page).
      const reason = error.error instanceof SyntaxError
        ? "the answer was not JSON (the Bot API or a proxy before it is failing)"
        : errorMessage(error.error);
      return new ChannelDeliveryError(
        "telegram.unreachable",
        clean(`Telegram ${method}: ${reason}`),
        { retryable: true },
      );
    }
    return new ChannelDeliveryError(
      "telegram.unreachable",
      clean(`Telegram ${method}: ${errorMessage(error)}`),
      { retryable: true },
    );
  }
}
