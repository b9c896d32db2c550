/**
 * The Signal channel, through signal-cli's HTTP daemon (signal-cli-jsonrpc(5)): incoming
 * messages from the server-sent events of `GET /api/v1/events`, answers with the JSON-RPC `send`
 * and `sendTyping`. Each event is written to the state database's inbox with its id before it is
 * answered; the stream is resumed after the stored id (`Last-Event-ID`: signal-cli keeps its last
 * 1000 events), so a restart of either side loses nothing and answers nothing twice. When the
 * daemon goes away the channel reconnects with backoff.
 * @module
 */
import { Buffer } from "node:buffer";
import type { DatabaseSync } from "node:sqlite";
import { getLogger } from "@logtape/logtape";
import { abortableSleep } from "../../sandbox/abortable_wait.ts";
import { parseSse } from "../../agent/sse.ts";
import { errorMessage } from "../../errors/coop_error.ts";
import type { TurnHandler } from "../../gateway/turn_handler.ts";
import { ChannelInbox, type InboxItem } from "../../state/channel_inbox.ts";
import { answerInChat, type ChatSender } from "../chat_answer.ts";
import { ChatQueues } from "../chat_queues.ts";
import {
  backoffDelay,
  type BackoffPolicy,
  DEFAULT_BACKOFF,
  deliverWithRetry,
} from "../delivery_retry.ts";
import { SignalRpc } from "./signal_rpc.ts";
import {
  readSignalText,
  SIGNAL,
  signalChat,
  type SignalReceive,
  type SignalText,
} from "./signal_envelope.ts";

const log = getLogger(["coop", "channel", "signal"]);

/**
 * Sent as `Last-Event-ID` before any event was stored: an id signal-cli does not know, so it
 * sends every event it kept while nobody listened, rather than none.
 */
const UNKNOWN_EVENT_ID = "0";

/** What the channel needs. */
export interface SignalChannelOptions {
  /** `account`: the number signal-cli serves. */
  account: string;
  /** `rpc_url`: the daemon's base URL. */
  rpcUrl: string;
  /** The state database (its inbox and last event id). */
  db: DatabaseSync;
  /** The gateway's turn handler. */
  handle: TurnHandler;
  /** How often "typing…" is renewed while a turn runs (default 10 s; Signal shows it ~15 s). */
  typingEveryMs?: number;
  /** Backoff of reconnects and deliveries. */
  backoff?: BackoffPolicy;
}

/**
 * Serves one signal-cli account until `stop()`.
 *
 * @example
 * ```ts
 * const channel = new SignalChannel({ account: "+15551234567", rpcUrl, db, handle });
 * await channel.start();
 * await channel.stop();
 * ```
 */
export class SignalChannel {
  readonly #options: SignalChannelOptions;
  readonly #rpc: SignalRpc;
  readonly #inbox: ChannelInbox;
  readonly #queues = new ChatQueues();
  readonly #listening = new AbortController();
  readonly #cancel = new AbortController();
  /** Cancels deliveries: at shutdown, after a grace period for replies already being sent. */
  #accountUuid: string | undefined;
  #loop: Promise<void> | undefined;
  #connected: () => void = () => {};

  constructor(options: SignalChannelOptions) {
    this.#options = options;
    this.#rpc = new SignalRpc(options.rpcUrl);
    this.#inbox = new ChannelInbox(options.db, SIGNAL, options.account);
  }

  /**
   * Answers what the inbox still holds and connects to the daemon's events; resolves once
   * connected (retrying with backoff while the daemon is not there).
   */
  async start(): Promise<void> {
    const connected = new Promise<void>((resolve) => this.#connected = resolve);
    for (const item of this.#inbox.pending()) this.#dispatch(item);
    this.#loop = this.#listen();
    await Promise.race([connected, this.#loop]);
    this.#listening.signal.throwIfAborted();
    this.#accountUuid = await this.#ownUuid();
    log.info("signal.started {account}", {
      event: "signal.started",
      account: this.#options.account,
      pending: this.#queues.busy,
    });
  }

  /** Stops listening and waits for what was received; with `cancel`, cancels turns too. */
  async stop(options: { cancel?: boolean } = {}): Promise<void> {
    this.#listening.abort();
    if (options.cancel) this.#cancel.abort();
    await this.#loop;
    await this.#queues.drain(options);
  }

  /** Our own uuid (mentions may name only it): `getUserStatus` of our number, if it answers. */
  async #ownUuid(): Promise<string | undefined> {
    try {
      const result = await this.#rpc.call("getUserStatus", {
        account: this.#options.account,
        recipient: [this.#options.account],
      }, this.#listening.signal) as Array<{ uuid?: string }> | undefined;
      return result?.[0]?.uuid ?? undefined;
    } catch (error) {
      log.debug("signal.own_uuid_unknown {reason}", { reason: errorMessage(error) });
      return undefined;
    }
  }

  async #listen(): Promise<void> {
    const signal = this.#listening.signal;
    let failures = 0;
    while (!signal.aborted) {
      try {
        const response = await fetch(`${this.#options.rpcUrl}/api/v1/events`, {
          headers: {
            accept: "text/event-stream",
            "last-event-id": this.#inbox.cursor() ?? UNKNOWN_EVENT_ID,
          },
          signal,
        });
        if (!response.ok || !response.body) {
          await response.body?.cancel();
          throw new Error(`GET /api/v1/events: HTTP ${response.status}`);
        }
        if (failures > 0) log.info("signal.reconnected", { event: "signal.reconnected" });
        failures = 0;
        this.#connected();
        for await (const event of parseSse(response.body)) {
          if (event.event !== "receive") continue;
          this.#received(event.data, event.id);
        }
        throw new Error("the daemon closed the event stream");
      } catch (error) {
        if (signal.aborted) break;
        const delayMs = backoffDelay(failures++, this.#options.backoff ?? DEFAULT_BACKOFF);
        log.warning("signal.events_failed, reconnecting in {delayMs} ms: {reason}", {
          event: "signal.events_failed",
          delayMs,
          reason: errorMessage(error),
        });
        await abortableSleep(delayMs, signal).catch(() => {});
      }
    }
  }

  #received(text: string, id: string | undefined): void {
    let data: SignalReceive;
    try {
      data = JSON.parse(text);
    } catch {
      log.warning("signal.bad_event", { event: "signal.bad_event", id });
      return;
    }
    // Only messages a person wrote are kept; receipts and typing just move the cursor.
    const read = readSignalText(data, this.#options.account, this.#accountUuid);
    const item = id ?? `t${data.envelope?.timestamp ?? Date.now()}:${signalChat(data)}`;
    const fresh = this.#inbox.receive(
      read ? [{ item, chat: read.chat, payload: data }] : [],
      id ?? this.#inbox.cursor() ?? UNKNOWN_EVENT_ID,
    );
    for (const entry of fresh) this.#dispatch(entry);
  }

  #dispatch(item: InboxItem): void {
    this.#queues.run(item.chat, async () => {
      const read = readSignalText(
        item.payload as SignalReceive,
        this.#options.account,
        this.#accountUuid,
      );
      if (read) {
        const answer = await answerInChat(this.#options.handle, read.incoming, this.#chat(read), {
          typingEveryMs: this.#options.typingEveryMs ?? 10_000,
          signal: this.#cancel.signal,
          deliverySignal: this.#queues.deliverySignal,
        });
        if (answer === "interrupted") return;
      }
      this.#inbox.done(item.seq);
    });
  }

  #chat(read: SignalText): ChatSender {
    const signal = this.#queues.deliverySignal;
    const retry = { signal, backoff: this.#options.backoff };
    const to = read.groupId === undefined
      ? { recipient: [read.recipient] }
      : { groupId: read.groupId };
    const base = { account: this.#options.account, ...to };
    const send = (params: Record<string, unknown>) =>
      deliverWithRetry(
        { channel: SIGNAL, method: "send" },
        () => this.#rpc.call("send", { ...base, ...params }, signal),
        retry,
      );
    // In a group the answer quotes the message it answers.
    const quote = read.groupId === undefined
      ? {}
      : { quoteTimestamp: read.quote.timestamp, quoteAuthor: read.quote.author };
    return {
      typing: async () => {
        await this.#rpc.call("sendTyping", base, signal);
      },
      typingDone: async () => {
        await this.#rpc.call("sendTyping", { ...base, stop: true }, signal);
      },
      text: async (text) => {
        await send({ message: text, ...quote });
      },
      file: async (file) => {
        const data = Buffer.from(file.bytes).toString("base64");
        await send({
          message: "",
          attachments: [`data:${file.mediaType};filename=${file.name};base64,${data}`],
        });
      },
    };
  }
}
