/**
 * The gateway: one message in from a channel or a cron job → who is speaking → their session →
 * the agent loop with the tools `authorize()` allows → every message persisted as it completes →
 * the reply out. Owns the state database, the executor and the in-flight turns (for draining).
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { getLogger } from "@logtape/logtape";
import { type ChatMessage, runTurn, TurnError } from "../agent/mod.ts";
import { loadSystemPrompt, withTurnContext } from "../agent/system_prompt.ts";
import { type ProviderOptions, selectModel } from "../agent/provider_registry.ts";
import { CoopError } from "../errors/coop_error.ts";
import type { TrustLevel } from "../trust/trust_level.ts";
import { SANDBOX_WORKSPACE_MOUNT } from "../tools/workspace_path.ts";
import type { IncomingMessage, TurnOutcome } from "./turn_handler.ts";
import { allowedTools, executorTool } from "./agent_tools.ts";
import { heldSecrets } from "../config/held_secrets.ts";
import { LeakGuard, type LeakStatus } from "./leak_guard.ts";
import { chatHistory, toSessionMessage } from "./chat_history.ts";
import type { CoopConfig, CronJobConfig } from "../config/config.ts";
import type { CronTurnResult } from "../cron/cron_scheduler.ts";
import { MemoryDatabase } from "../state/memory_store.ts";
import { type Route, routeMessage, routeUser, sessionOwner } from "./router.ts";
import { type ExecutorDependencies, ToolExecutor } from "../tools/tool_executor.ts";
import { newSessionId, type SessionKey, SessionStore } from "../state/session_store.ts";
import { openStateDb } from "../state/state_db.ts";
import { type TurnAdmission, TurnLimiter, turnLimitFor } from "./turn_limiter.ts";
import { TurnTaint } from "./turn_taint.ts";

const log = getLogger(["coop", "gateway"]);

/** Messages of a session given to the model as context. */
export const HISTORY_LIMIT = 200;

/** A turn that could not run or failed; `code` is stable, the message safe to show the owner. */
export class GatewayError extends CoopError {
  constructor(code: string, message: string, options?: ErrorOptions) {
    super(code, message, options);
    this.name = "GatewayError";
  }
}

/** What the gateway may be given instead of the real world (tests inject fakes). */
export interface GatewayDependencies {
  /** The executor's dependencies (fake sandbox, host runner, environment). */
  executor?: ExecutorDependencies;
  /** Provider options (environment lookup, retry policy, fetch). */
  provider?: ProviderOptions;
  /** An open state database; default `openStateDb(config.agent.stateDir)`. */
  db?: DatabaseSync;
}

/** A turn as the gateway runs it, from a channel or a cron job. */
interface TurnRequest {
  channel: string;
  route: Route;
  /** The session key's user (see `sessionOwner`). */
  sessionUser: string;
  text: string;
  session?: string;
  cronJob?: CronJobConfig;
  signal?: AbortSignal;
  onEvent?: IncomingMessage["onEvent"];
}

/**
 * Runs turns for every channel. `handle` is the channels' `TurnHandler`; `runCronJob` is the
 * cron scheduler's runner; `drain` cancels what is in flight (SIGTERM).
 *
 * @example
 * ```ts
 * const gateway = Gateway.open(await loadConfig("coop.toml"));
 * const outcome = await gateway.handle({ channel: "http", sender: "bob", text: "hi" });
 * await gateway.drain();
 * gateway.close();
 * ```
 */
export class Gateway {
  readonly config: CoopConfig;
  readonly executor: ToolExecutor;
  readonly sessions: SessionStore;
  /** Scans what leaves the gateway for its own secrets and credential shapes. */
  readonly leaks: LeakGuard;
  /** Each person's turns running and waiting (ATTACKS R14). */
  readonly #turns = new TurnLimiter();
  readonly #db: DatabaseSync;
  readonly #providerOptions: ProviderOptions;
  readonly #inFlight = new Map<AbortController, Promise<unknown>>();
  /** The last turn queued per session: turns of one session run one after another. */
  readonly #sessionTails = new Map<string, Promise<unknown>>();
  #draining = false;

  private constructor(config: CoopConfig, db: DatabaseSync, deps: GatewayDependencies) {
    this.config = config;
    this.#db = db;
    this.sessions = new SessionStore(db);
    this.executor = new ToolExecutor(config, {
      memory: new MemoryDatabase(db),
      ...deps.executor,
    });
    this.#providerOptions = deps.provider ?? {};
    this.leaks = new LeakGuard(config, heldSecrets(config, this.#providerOptions.env));
  }

  /** Opens the state database and builds the executor for `config`. */
  static open(config: CoopConfig, deps: GatewayDependencies = {}): Gateway {
    return new Gateway(config, deps.db ?? openStateDb(config.agent.stateDir), deps);
  }

  /** Who a channel sender is; `[channels.terminal] user` names the terminal's user outright. */
  route(channel: string, sender: string): Route {
    const terminalUser = this.config.channels.terminal?.user;
    const user = channel === "terminal" && terminalUser
      ? this.config.users.find((u) => u.name === terminalUser)
      : undefined;
    return user ? routeUser(user) : routeMessage(this.config, { channel, sender });
  }

  /** The channels' turn handler: routes the sender and runs the turn. */
  handle = (message: IncomingMessage): Promise<TurnOutcome> => {
    const route = this.route(message.channel, message.sender);
    return this.#run({
      channel: message.channel,
      route,
      sessionUser: sessionOwner(route, message),
      text: message.text,
      session: message.session,
      signal: message.signal,
      onEvent: message.onEvent,
    });
  };

  /** The cron scheduler's runner: a fresh session as the job's user, with the job's overrides. */
  runCronJob = async (job: CronJobConfig, signal: AbortSignal): Promise<CronTurnResult> => {
    const user = this.config.users.find((u) => u.name === job.user);
    if (!user) {
      throw new GatewayError(
        "gateway.cron_unknown_user",
        `cron job "${job.name}" runs as "${job.user}", who is not a configured user`,
      );
    }
    const route = routeUser(user);
    const outcome = await this.#run({
      channel: "cron",
      route,
      sessionUser: sessionOwner(route, { channel: "cron", sender: job.name }),
      text: job.message,
      cronJob: job,
      signal,
    });
    return { reply: outcome.reply, session: outcome.session };
  };

  /** Forgets a session (`/clear`). */
  clearSession(channel: string, sender: string, session: string): boolean {
    const user = sessionOwner(this.route(channel, sender), { channel, sender });
    return this.sessions.clear({ channel, user, session });
  }

  /** Cancels every turn in flight (killing their sandboxes) and waits for them to end. */
  async drain(): Promise<void> {
    this.#draining = true;
    const turns = [...this.#inFlight];
    log.info("gateway.drain {turns} turns in flight", {
      event: "gateway.drain",
      turns: turns.length,
    });
    for (const [controller] of turns) {
      controller.abort(new GatewayError("gateway.shutdown", "the gateway is shutting down"));
    }
    await Promise.allSettled(turns.map(([, turn]) => turn));
  }

  /** Each person's turns right now: running, and admitted but waiting (ATTACKS R14). */
  turnCounts(): Record<string, { running: number; waiting: number }> {
    return this.#turns.counts();
  }

  /** What `/status` shows of the gateway: leaks replaced so far. */
  status(): { leaks: LeakStatus } {
    return { leaks: this.leaks.status() };
  }

  /** Closes the state database (every message is already committed). */
  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  #run(request: TurnRequest): Promise<TurnOutcome> {
    if (this.#draining) {
      return Promise.reject(new GatewayError("gateway.shutdown", "the gateway is shutting down"));
    }
    // One person's turns (and so sandboxes) at once are capped (ATTACKS R14); the rest wait in
    // a bounded queue or are refused here, before anything is recorded.
    const limit = turnLimitFor(this.config, request.route);
    let admission: TurnAdmission | undefined;
    try {
      admission = limit ? this.#turns.admit(request.sessionUser, limit) : undefined;
    } catch (error) {
      return Promise.reject(error);
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal?.reason);
    if (request.signal?.aborted) onAbort();
    else request.signal?.addEventListener("abort", onAbort, { once: true });
    // Two requests for one session at once would interleave their messages in its history;
    // the second waits for the first (a new session has nothing to wait for).
    const key = request.session === undefined
      ? undefined
      : [request.channel, request.sessionUser, request.session].join("\0");
    const previous = key === undefined ? undefined : this.#sessionTails.get(key);
    // The slot is taken once the session's previous turn is done: a turn waiting for its
    // session holds a place in the queue, not a slot.
    const start = async () => {
      controller.signal.throwIfAborted();
      await admission?.start(controller.signal);
      return this.#turn(request, controller.signal);
    };
    const turn = (previous ? previous.then(start, start) : Promise.resolve().then(start)).finally(
      () => {
        admission?.done();
        request.signal?.removeEventListener("abort", onAbort);
        this.#inFlight.delete(controller);
        if (key !== undefined && this.#sessionTails.get(key) === turn) {
          this.#sessionTails.delete(key);
        }
      },
    );
    if (key !== undefined) this.#sessionTails.set(key, turn);
    this.#inFlight.set(controller, turn);
    return turn;
  }

  async #turn(request: TurnRequest, signal: AbortSignal): Promise<TurnOutcome> {
    const { route, channel } = request;
    const { principal, user } = route;
    const key: SessionKey = {
      channel,
      user: request.sessionUser,
      session: request.session ?? newSessionId(),
    };
    const stored = this.sessions.history(key, HISTORY_LIMIT);
    // The history and every memory the turn reads lower it (ATTACKS P14); see `TurnTaint`.
    const taint = TurnTaint.fromHistory(principal, { channel, ceiling: route.ceiling }, stored);
    const trust = taint.trust;
    // Every message is committed before the turn goes on (a crash of Coop loses at most the
    // one in progress); it is on disk — fsynced — before the channel acknowledges anything: the
    // reply's commit syncs all of the turn's, and `sync()` covers a turn that ends otherwise.
    // Each carries the turn's trust when it completed, so what the turn read taints its session.
    const persist = (message: ChatMessage) =>
      this.sessions.append(key, toSessionMessage(message, principal.name, taint.trust), {
        durable: isFinalReply(message),
      });
    const started = performance.now();
    log.info("gateway.turn.start", {
      event: "gateway.turn.start",
      channel,
      principal: principal.name,
      trust,
      route: route.reason,
      session: key.session,
      cronJob: request.cronJob?.name,
    });
    const { provider, model } = selectModel(
      this.config.agent.model,
      this.config.providers,
      this.#providerOptions,
    );
    const tools = allowedTools(this.executor, principal, taint.situation);
    const system = withTurnContext(await loadSystemPrompt(this.config.agent.workspace), {
      user: principal.name,
      trust,
      channel,
      workspace: tools.length === 0 ? null : workspaceSeenBy(trust, this.config),
    });
    // The user's message is committed before the model sees it: a crash cannot lose it.
    persist({ role: "user", content: request.text });
    const leakScope = () => ({ principal: principal.name, trust: taint.trust, channel });
    const events = this.leaks.streamed(request.onEvent, leakScope);
    try {
      const result = await runTurn({
        provider,
        model,
        system,
        history: chatHistory(stored),
        userText: request.text,
        tools,
        executeTool: executorTool(this.executor, {
          taint,
          user,
          cronJob: request.cronJob,
          leaks: this.leaks,
        }),
        maxIterations: this.config.agent.maxIterations,
        maxTokens: this.config.agent.maxTokens,
        signal,
        onEvent: events.onEvent,
        onMessage: persist,
      });
      events.flush();
      log.info("gateway.turn.end", {
        event: "gateway.turn.end",
        channel,
        principal: principal.name,
        session: key.session,
        stopReason: result.stopReason,
        trust: taint.trust,
        tools: result.tools,
        durationMs: Math.round(performance.now() - started),
      });
      if (result.stopReason === "cancelled" && signal.reason instanceof GatewayError) {
        throw signal.reason;
      }
      const reply = this.leaks.redact(result.reply, { ...leakScope(), where: "reply" });
      return { reply, session: key.session, tools: result.tools };
    } catch (error) {
      if (error instanceof TurnError) {
        log.error("gateway.turn.failed {code}: {message}", {
          event: "gateway.turn.failed",
          channel,
          principal: principal.name,
          session: key.session,
          code: error.code,
          message: error.message,
        });
      }
      throw error;
    } finally {
      this.sessions.sync();
    }
  }
}

/** The agent loop's last message of a turn that ends with a reply: text and no tool calls. */
function isFinalReply(message: ChatMessage): boolean {
  return message.role === "assistant" && message.toolCalls.length === 0;
}

/** Where the turn's tools see files: the owner's on the host, everyone else's in the sandbox. */
function workspaceSeenBy(trust: TrustLevel, config: CoopConfig): string {
  return trust === "owner" ? config.agent.workspace : SANDBOX_WORKSPACE_MOUNT;
}
