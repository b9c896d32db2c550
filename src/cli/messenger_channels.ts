/**
 * The messenger channels `coop start` runs (Telegram, Signal), started, stopped and restarted as
 * the config says: at start, and on every reload — a channel added, removed, or re-keyed (another
 * token variable, API root, account or daemon) is started or stopped; one whose table did not
 * change keeps running untouched.
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { getLogger } from "@logtape/logtape";
import { errorMessage } from "../errors/coop_error.ts";
import type { CoopConfig } from "../config/config.ts";
import { telegramTokenEnv } from "../config/messenger_schema.ts";
import type { TurnHandler } from "../gateway/turn_handler.ts";

const log = getLogger(["coop", "start"]);

/** A running messenger channel. */
interface Running {
  /** What identifies its connection: a change restarts it. */
  key: string;
  channel: { stop(options?: { cancel?: boolean }): Promise<void> };
  /** Settles once it started (or failed to). */
  started: Promise<void>;
}

/** A channel's `stop`, which waits for its module to load first. */
type Stoppable = Running["channel"];

/**
 * A channel whose module is imported only when it is configured: grammy alone costs the gateway
 * ~8 MB of RSS at idle (docs/performance.md, session 12), which nobody without Telegram should pay.
 * `start` runs once the module loaded; `stop` waits for it (a channel stopped while loading stops
 * once it exists, before it started). A module that fails to load is reported as a failed start.
 */
function lazyChannel<C extends Stoppable>(
  load: () => Promise<C>,
  start: (channel: C) => Promise<void>,
  loadFailed: (error: unknown) => void,
): Omit<Running, "key"> {
  const loaded = load();
  let stopped = false;
  const channel: Stoppable = {
    stop: async (options) => {
      stopped = true;
      // One that never loaded has nothing to stop (its failure was reported as a failed start).
      await (await loaded.catch(() => null))?.stop(options);
    },
  };
  const started = loaded.then((c) => stopped ? undefined : start(c), loadFailed);
  return { channel, started };
}

/** What the channels need from `coop start`. */
export interface MessengerChannelsOptions {
  db: DatabaseSync;
  handle: TurnHandler;
  /** Reads an environment variable (the bot token). */
  env: (name: string) => string | undefined;
  /** Tells the operator on stderr. */
  say: (text: string) => void;
}

/** Which messenger channels a config enables. */
export function enabledMessengers(config: CoopConfig): string[] {
  return (["telegram", "signal"] as const).filter((name) => config.channels[name]?.enabled);
}

/**
 * The running messenger channels; `apply` brings them in line with a config.
 *
 * @example
 * ```ts
 * const messengers = new MessengerChannels({ db, handle: gateway.handle, env, say });
 * await messengers.apply(config);
 * await messengers.stop({ cancel: true });
 * ```
 */
export class MessengerChannels {
  readonly #options: MessengerChannelsOptions;
  readonly #running = new Map<string, Running>();

  constructor(options: MessengerChannelsOptions) {
    this.#options = options;
  }

  /** Starts, stops or restarts channels so they match `config`; returns what it did. */
  async apply(config: CoopConfig): Promise<string[]> {
    const wanted = this.#wanted(config);
    const done: string[] = [];
    for (const [name, running] of this.#running) {
      if (wanted.get(name)?.key === running.key) continue;
      // Removed or re-keyed: what it received is still answered; it takes nothing new.
      this.#running.delete(name);
      await running.channel.stop();
      done.push(`${name} stopped`);
    }
    for (const [name, start] of wanted) {
      if (this.#running.has(name)) continue;
      const running = start.run();
      if (running) {
        this.#running.set(name, { key: start.key, ...running });
        done.push(`${name} started`);
      }
    }
    return done;
  }

  /** Resolves once every running channel finished starting (tests and the benchmark). */
  async started(): Promise<void> {
    await Promise.all([...this.#running.values()].map((r) => r.started));
  }

  /** Stops every channel; with `cancel`, turns in flight are cancelled (shutdown). */
  async stop(options: { cancel?: boolean } = {}): Promise<void> {
    const all = [...this.#running.values()];
    this.#running.clear();
    await Promise.all(all.map((r) => r.channel.stop(options)));
  }

  #wanted(
    config: CoopConfig,
  ): Map<string, { key: string; run: () => Omit<Running, "key"> | null }> {
    const wanted = new Map<string, { key: string; run: () => Omit<Running, "key"> | null }>();
    const { say, db, handle } = this.#options;
    const telegram = config.channels.telegram;
    if (telegram?.enabled) {
      const tokenEnv = telegramTokenEnv(telegram);
      wanted.set("telegram", {
        key: JSON.stringify([tokenEnv, telegram.api_base_url]),
        run: () => {
          const token = this.#options.env(tokenEnv) ?? "";
          if (token === "") {
            say(
              `telegram: ${tokenEnv} is not set (channels.telegram.bot_token_env); not serving Telegram`,
            );
            return null;
          }
          const failed = (error: unknown) =>
            this.#failed("telegram", error, `check ${tokenEnv} (channels.telegram)`);
          return lazyChannel(
            async () => {
              const { TelegramChannel } = await import("../channels/telegram/telegram_channel.ts");
              return new TelegramChannel({ token, apiRoot: telegram.api_base_url, db, handle });
            },
            (channel) =>
              channel.start().then(
                (bot) => say(`telegram channel: @${bot.username} (bot id ${bot.id})`),
                failed,
              ),
            failed,
          );
        },
      });
    }
    const signal = config.channels.signal;
    if (signal?.enabled) {
      wanted.set("signal", {
        key: JSON.stringify([signal.account, signal.rpc_url]),
        run: () => {
          const failed = (error: unknown) => this.#failed("signal", error, "check channels.signal");
          return lazyChannel(
            async () => {
              const { SignalChannel } = await import("../channels/signal/signal_channel.ts");
              return new SignalChannel({
                account: signal.account,
                rpcUrl: signal.rpc_url,
                db,
                handle,
              });
            },
            (channel) =>
              channel.start().then(
                () => say(`signal channel: ${signal.account} via ${signal.rpc_url}`),
                failed,
              ),
            failed,
          );
        },
      });
    }
    return wanted;
  }

  #failed(name: string, error: unknown, hint: string): void {
    if (error instanceof DOMException && error.name === "AbortError") return; // stopped first
    log.error("{channel} channel not started: {reason}", {
      event: "channel.start_failed",
      channel: name,
      reason: errorMessage(error),
    });
    this.#options.say(`${name}: not serving: ${errorMessage(error)} (${hint})`);
    const running = this.#running.get(name);
    if (running) {
      this.#running.delete(name);
      running.channel.stop().catch(() => {});
    }
  }
}
