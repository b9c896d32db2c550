/**
 * The gateway: one message in from a channel or a cron job → who is speaking → their session →
 * the agent loop with the tools `authorize()` allows → every message persisted as it completes →
 * the reply out. Owns the state database, the executor and the in-flight turns (for draining).
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import { getLogger } from "@logtape/logtape";
import type { ConfigChanges } from "../config/config_changes.ts";
import type { ProviderOptions } from "../agent/provider_registry.ts";
import type { IncomingMessage, TurnOutcome } from "./turn_handler.ts";
import { endEnvironmentSession } from "./environment_sessions.ts";
import { heldSecrets } from "../config/held_secrets.ts";
import { LeakGuard, type LeakStatus } from "./leak_guard.ts";
import type { CoopConfig, CronJobConfig } from "../config/config.ts";
import type { CronTurnResult } from "../cron/cron_scheduler.ts";
import { MemoryDatabase } from "../state/memory_store.ts";
import { leftoverData } from "./pairing_leftovers.ts";
import { type Route, routeSender, sessionOwner } from "./router.ts";
import { ToolExecutor } from "../tools/tool_executor.ts";
import { SessionSandboxes } from "../tools/session_sandboxes.ts";
import { WorkspaceGuard } from "../workspace/workspace_guard.ts";
import { newSessionId, SessionStore } from "../state/session_store.ts";
import { openStateDb } from "../state/state_db.ts";
import { WalFlusher } from "../state/wal_flush.ts";
import { liveSandboxCap, type TurnAdmission, TurnLimiter, turnLimitFor } from "./turn_limiter.ts";
import { PairingStore } from "../state/pairing_store.ts";
import { PairingGate } from "./pairing_gate.ts";
import { pairedUsers } from "./pairing_approval.ts";
import { runChatCommand } from "./chat_commands.ts";
import { clearedReply, clearTarget, endSession } from "./session_clear.ts";
import { planMessage } from "./message_plan.ts";
import { keepAsContext } from "./group_chat.ts";
import { SessionQueue } from "./session_queue.ts";
import type { TurnRequest } from "./turn_request.ts";
import { BudgetGate, type TurnMeter } from "./budget_gate.ts";
import { UsageStore } from "../state/usage_store.ts";
import { LONGEST_BUDGET_WINDOW_MS } from "../config/budget_settings.ts";
import { GatewayError } from "./gateway_error.ts";
import { runConversationTurn } from "./conversation_turn.ts";
import { endChangedSessions } from "./reload_sessions.ts";
import { cronRoute } from "./cron_route.ts";
import { environmentWritesSettled } from "../sandbox/mod.ts";
import type { GatewayDependencies } from "./gateway_dependencies.ts";

const log = getLogger(["coop", "gateway"]);

export { HISTORY_LIMIT } from "./conversation_turn.ts";
export { GatewayError } from "./gateway_error.ts";
export type { GatewayDependencies } from "./gateway_dependencies.ts";

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
  #config: CoopConfig;
  #executor: ToolExecutor;
  readonly sessions: SessionStore;
  /** Live sandboxes of `lifetime = "session"`, across config reloads. */
  readonly sessionSandboxes: SessionSandboxes;
  /** The workspace scans after calls, across config reloads (a session's scans chain). */
  readonly #workspaceGuard = new WorkspaceGuard();
  readonly #deps: GatewayDependencies;
  /** Pairing requests and paired people (shared with `coop pairing` through the database). */
  readonly pairing: PairingStore;
  readonly #pairingGate: PairingGate;
  /** Scans what leaves the gateway for its own secrets and credential shapes. */
  #leaks: LeakGuard;
  /** Each person's turns running and waiting (ATTACKS R14). */
  readonly #turns = new TurnLimiter();
  /** Budgets per person and group chat, counted in the state database. */
  #budgets: BudgetGate;
  readonly #usage: UsageStore;
  readonly #db: DatabaseSync;
  /** The memory stores (in the state database), for every executor and the pairing commands. */
  readonly #memories: MemoryDatabase;
  readonly #wal?: WalFlusher;
  readonly #providerOptions: ProviderOptions;
  readonly #inFlight = new Map<AbortController, Promise<unknown>>();
  /** Turns of one session run one after another. */
  readonly #sessions = new SessionQueue();
  #draining = false;

  private constructor(config: CoopConfig, db: DatabaseSync, deps: GatewayDependencies) {
    this.#config = config;
    this.#db = db;
    this.#memories = new MemoryDatabase(db);
    this.#deps = deps;
    // Group commit: a turn's messages are committed without an fsync and the turn awaits one
    // shared fsync of the WAL, off the event loop, before its reply leaves (docs/sessions.md).
    const location = db.location();
    this.#wal = location ? new WalFlusher(location, { syncData: deps.walSync, db }) : undefined;
    this.sessions = new SessionStore(db, undefined, this.#wal);
    this.pairing = new PairingStore(db);
    this.#pairingGate = new PairingGate(this.pairing, () => this.config.pairing, deps.now);
    this.sessionSandboxes = deps.sessionSandboxes ??
      new SessionSandboxes(config.agent.stateDir, {
        maxPerPerson: (u) => liveSandboxCap(this.config, u),
      });
    this.#executor = this.#newExecutor(config);
    this.#providerOptions = deps.provider ?? {};
    this.#usage = new UsageStore(db, undefined, this.#wal);
    this.#usage.prune(LONGEST_BUDGET_WINDOW_MS);
    this.#budgets = new BudgetGate(config, this.#usage);
    this.#leaks = new LeakGuard(config, heldSecrets(config, this.#providerOptions.env));
  }

  /** The config new turns run under. */
  get config(): CoopConfig {
    return this.#config;
  }

  /** The executor new turns' tools run through (one per config). */
  get executor(): ToolExecutor {
    return this.#executor;
  }

  /** Scans what leaves the gateway for its own secrets and credential shapes. */
  get leaks(): LeakGuard {
    return this.#leaks;
  }

  /**
   * Applies a reloaded config (already checked) to every turn that starts from now on; turns in
   * flight keep the config and executor they started with, the live sandboxes of the people it
   * changed end. The state directory is not moved.
   */
  reconfigure(config: CoopConfig, changes?: ConfigChanges): void {
    this.#config = config;
    endChangedSessions(this.sessionSandboxes, changes);
    this.#executor = this.#newExecutor(config);
    // Group budgets come from the new config; the counters stay (they are in the database).
    this.#budgets = new BudgetGate(config, this.#usage);
    // The secrets held may have changed (a re-keyed channel); the counts go on.
    this.#leaks = this.#leaks.reconfigured(config, heldSecrets(config, this.#providerOptions.env));
  }

  #newExecutor(config: CoopConfig): ToolExecutor {
    return new ToolExecutor(config, {
      memory: this.#memories,
      sessionSandboxes: this.sessionSandboxes,
      workspaceGuard: this.#workspaceGuard,
      pairedPeople: () => this.pairing.people(),
      ...this.#deps.executor,
    });
  }

  /** Opens the state database and builds the executor for `config`. */
  static open(config: CoopConfig, deps: GatewayDependencies = {}): Gateway {
    return new Gateway(config, deps.db ?? openStateDb(config.agent.stateDir), deps);
  }

  /**
   * Who a channel sender is, in which chat (`routeSender`: `[channels.terminal] user` names
   * the terminal's user outright; configured users, then paired people — read anew each time,
   * so an approval counts from the next message; a group's ceiling applies; `aliases` are the
   * sender's other identifiers on the channel).
   */
  route(channel: string, sender: string, group?: string, aliases?: readonly string[]): Route {
    const paired = pairedUsers(this.pairing, this.config);
    return routeSender(this.config, { channel, sender, group, aliases }, paired);
  }

  /**
   * The channels' turn handler: routes the sender; an unknown one in a direct messenger chat is
   * paired instead; `/status`, `/approve`, `/deny` and `/clear` are answered here; a group message that
   * does not address the agent is kept as context (silent); everything else is a turn.
   */
  handle = async (message: IncomingMessage): Promise<TurnOutcome> => {
    const { channel, sender, group, senderAliases } = message;
    const route = this.route(channel, sender, group, senderAliases);
    if (this.#pairingGate.applies(route, message)) return this.#pairingGate.answer(message);
    const plan = planMessage(message, route);
    if (plan.kind === "command") {
      const command = plan.command;
      if (command.name === "clear") return await this.#clear(message, route);
      const hasData = leftoverData(this.config.agent.workspace, this.#memories);
      const known = { config: this.config, pairing: this.pairing, leaks: this.leaks.status() };
      return {
        reply: runChatCommand(command, { route, message, hasData, ...known }),
        session: "",
        tools: [],
      };
    }
    if (plan.kind === "context") {
      return await keepAsContext(this.sessions, this.#sessions, plan, route.principal.name);
    }
    return await this.#run({
      channel: message.channel,
      route,
      person: sessionOwner(route, message),
      sessionUser: plan.sessionUser,
      session: plan.session,
      ...(plan.group ? { group: plan.group } : {}),
      text: plan.text,
      signal: message.signal,
      onEvent: message.onEvent,
    });
  };

  /** `/status` for a sender (the terminal's shows it too). */
  status(channel: string, sender: string): string {
    const context = {
      message: { channel, sender },
      config: this.config,
      pairing: this.pairing,
      leaks: this.leaks.status(),
    };
    return runChatCommand({ name: "status" }, { route: this.route(channel, sender), ...context });
  }

  /** The cron scheduler's runner: a fresh session as the job's user, with the job's overrides. */
  runCronJob = async (job: CronJobConfig, signal: AbortSignal): Promise<CronTurnResult> => {
    const { user, route, person } = cronRoute(this.config, job);
    const session = newSessionId(); // here, so that a failed run's session ends too
    try {
      const run = { channel: "cron", route, sessionUser: person, person, session, signal };
      const { reply } = await this.#run({ ...run, text: job.message, cronJob: job });
      return { reply, session };
    } finally {
      // Each run is a session of its own, over once it answered or failed (provider error, the
      // job's timeout, a drain): its live sandbox stops first, then its session upper goes.
      await this.sessionSandboxes.stop({ channel: "cron", user: person, session });
      await endEnvironmentSession(this.config, user.name, { channel: "cron", id: session });
    }
  };

  /** Forgets a session (`/clear` in `coop chat`). */
  clearSession(channel: string, sender: string, session: string): boolean {
    const route = this.route(channel, sender);
    const user = sessionOwner(route, { channel, sender });
    const key = { channel, user, session };
    const cleared = this.sessions.clear(key);
    const environmentSession = { channel, id: session };
    void endSession(this.config, this.sessionSandboxes, {
      key,
      sandboxes: [key],
      environmentSession,
      people: [route.principal.name],
    });
    return cleared;
  }

  /** `/clear` from a channel: after the session's turn in progress, the session ends. */
  async #clear(message: IncomingMessage, route: Route): Promise<TurnOutcome> {
    const known = [...this.config.users, ...pairedUsers(this.pairing, this.config)];
    const names = known.map((u) => u.name);
    const target = clearTarget(message, route, this.config.sandbox.enabled, names);
    if ("refusal" in target) return { reply: target.refusal, session: "", tools: [] };
    const cleared = await this.#sessions.after(target.key, async () => {
      const had = this.sessions.clear(target.key);
      await endSession(this.config, this.sessionSandboxes, target);
      return had;
    });
    return { reply: clearedReply(cleared), session: "", tools: [] };
  }

  /** Cancels every turn in flight (killing their sandboxes); waits for them and their writes. */
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
    await this.sessionSandboxes.stopAll();
    // What the sandboxes leave to do in the state directory (work directories to remove, a
    // pool being refilled, upper syncs) ends too: nothing writes there once drained.
    await environmentWritesSettled();
  }

  /** Each person's turns right now: running, and admitted but waiting (ATTACKS R14). */
  turnCounts(): Record<string, { running: number; waiting: number }> {
    return this.#turns.counts();
  }

  /** What `/status` shows of the gateway: leaks replaced so far. */
  statusReport(): { leaks: LeakStatus } {
    return { leaks: this.leaks.status() };
  }

  /** Closes the state database (every message is already committed). */
  close(): void {
    if (this.#db.isOpen) this.#usage.writePending();
    this.#wal?.close();
    if (this.#db.isOpen) this.#db.close();
  }

  #run(fields: Omit<TurnRequest, "config" | "executor">): Promise<TurnOutcome> {
    const request: TurnRequest = { ...fields, config: this.#config, executor: this.#executor };
    if (this.#draining) {
      return Promise.reject(new GatewayError("gateway.shutdown", "the gateway is shutting down"));
    }
    // One person's turns (and so sandboxes) at once are capped (ATTACKS R14); the rest wait in
    // a bounded queue or are refused here, before anything is recorded.
    const limit = turnLimitFor(request.config, request.route);
    let admission: TurnAdmission | undefined;
    let meter: TurnMeter;
    try {
      admission = limit ? this.#turns.admit(request.person, limit) : undefined;
      // A spent budget refuses the turn before any model call; a turn let in counts from now.
      meter = this.#budgets.admit({
        route: request.route,
        person: request.person,
        channel: request.channel,
        ...(request.group ? { group: request.group.id } : {}),
      });
    } catch (error) {
      admission?.done();
      return Promise.reject(error);
    }
    const controller = new AbortController();
    const onAbort = () => controller.abort(request.signal?.reason);
    if (request.signal?.aborted) onAbort();
    else request.signal?.addEventListener("abort", onAbort, { once: true });
    // The slot is taken once the session's previous turn is done: a turn waiting for its
    // session holds a place in the queue, not a slot.
    const start = async () => {
      controller.signal.throwIfAborted();
      await admission?.start(controller.signal);
      return runConversationTurn(request, {
        signal: controller.signal,
        meter,
        sessions: this.sessions,
        leaks: () => this.leaks,
        providerOptions: this.#providerOptions,
      });
    };
    const key = request.session === undefined
      ? undefined
      : { channel: request.channel, user: request.sessionUser, session: request.session };
    const turn = this.#sessions.after(key, start).finally(() => {
      admission?.done();
      request.signal?.removeEventListener("abort", onAbort);
      this.#inFlight.delete(controller);
    });
    this.#inFlight.set(controller, turn);
    return turn;
  }
}
