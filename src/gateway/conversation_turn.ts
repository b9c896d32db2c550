/**
 * The body of one admitted turn: the session's history and the taint it carries, the system
 * prompt and the tools the turn's trust allows, the agent loop with every message persisted as
 * it completes, and the reply redacted of the gateway's secrets.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { type ChatMessage, runTurn, TurnError } from "../agent/mod.ts";
import { loadSystemPrompt, withTurnContext } from "../agent/system_prompt.ts";
import { type ProviderOptions, selectModel } from "../agent/provider_registry.ts";
import type { CoopConfig } from "../config/config.ts";
import type { TrustLevel } from "../trust/trust_level.ts";
import { SANDBOX_WORKSPACE_MOUNT } from "../tools/workspace_path.ts";
import { newSessionId, type SessionKey, type SessionStore } from "../state/session_store.ts";
import type { OutgoingFile, TurnOutcome } from "./turn_handler.ts";
import type { TurnRequest } from "./turn_request.ts";
import type { TurnMeter } from "./budget_gate.ts";
import type { LeakGuard } from "./leak_guard.ts";
import { allowedTools, executorTool } from "./agent_tools.ts";
import { chatHistory, toSessionMessage } from "./chat_history.ts";
import { TurnTaint } from "./turn_taint.ts";
import { GatewayError } from "./gateway_error.ts";
import { groupSandboxSession } from "./group_chat.ts";

const log = getLogger(["coop", "gateway"]);

/** Messages of a session given to the model as context. */
export const HISTORY_LIMIT = 200;

/** What an admitted turn runs with besides its request. */
export interface ConversationTurnOptions {
  /** Aborted when the turn is cancelled (its channel, or the gateway draining). */
  signal: AbortSignal;
  /** Counts the turn's tokens and sandbox seconds against its budgets. */
  meter: TurnMeter;
  /** Where the session's messages are read and committed. */
  sessions: SessionStore;
  /** The leak guard in force, read at each use (a reload mid-turn applies to the reply). */
  leaks: () => LeakGuard;
  /** Provider options (environment lookup, retry policy, fetch). */
  providerOptions: ProviderOptions;
}

/**
 * Runs one turn that was admitted (turn cap, budgets, its session's previous turn done) and
 * returns the reply once every message of it is committed and on disk.
 */
export async function runConversationTurn(
  request: TurnRequest,
  options: ConversationTurnOptions,
): Promise<TurnOutcome> {
  const { signal, meter, sessions, leaks, providerOptions } = options;
  const { route, channel, config, executor } = request;
  const { principal, user } = route;
  const key: SessionKey = {
    channel,
    user: request.sessionUser,
    session: request.session ?? newSessionId(),
  };
  const stored = sessions.history(key, HISTORY_LIMIT);
  // The history and every memory the turn reads lower it (ATTACKS P14); see `TurnTaint`.
  const taint = TurnTaint.fromHistory(principal, { channel, ceiling: route.ceiling }, stored);
  const trust = taint.trust;
  // Every message is committed before the turn goes on (a crash of Coop loses at most the
  // one in progress), without an fsync; the turn awaits one shared fsync of the WAL (group
  // commit, off the event loop) before it returns, so nothing is acknowledged before it is
  // on disk. Each carries the turn's trust when it completed, so what the turn read taints
  // its session.
  const persist = (message: ChatMessage) =>
    sessions.append(key, toSessionMessage(message, principal.name, taint.trust), {
      durable: false,
    });
  const started = performance.now();
  log.info("gateway.turn.start", {
    event: "gateway.turn.start",
    channel,
    group: request.group?.id,
    principal: principal.name,
    trust,
    route: route.reason,
    session: key.session,
    cronJob: request.cronJob?.name,
  });
  const { provider, model } = selectModel(
    config.agent.model,
    config.providers,
    providerOptions,
  );
  const tools = allowedTools(executor, principal, taint.situation);
  const system = withTurnContext(await loadSystemPrompt(config.agent.workspace), {
    user: principal.name,
    trust,
    channel,
    workspace: tools.length === 0 ? null : workspaceSeenBy(trust, config),
    ...(request.group ? { group: `${channel}:${request.group.id}` } : {}),
  });
  // The user's message is committed before the model sees it: a crash cannot lose it.
  persist({ role: "user", content: request.text });
  const files: OutgoingFile[] = [];
  const leakScope = () => ({ principal: principal.name, trust: taint.trust, channel });
  const events = leaks().streamed(request.onEvent, leakScope);
  try {
    const result = await runTurn({
      provider,
      model,
      system,
      history: chatHistory(stored),
      userText: request.text,
      tools,
      executeTool: executorTool(executor, {
        taint,
        user,
        cronJob: request.cronJob,
        onSandboxSeconds: meter.addSandboxSeconds,
        sandboxBudgetSpent: meter.sandboxBudgetSpent,
        session: request.group
          ? groupSandboxSession(channel, request.group.id, principal.name)
          : key,
        files,
        leaks: leaks(),
        ...(request.group ? { groupDir: request.group.dir } : {}),
      }),
      maxIterations: config.agent.maxIterations,
      maxTokens: config.agent.maxTokens,
      signal,
      onEvent: events.onEvent,
      onMessage: persist,
      onUsage: (usage) => meter.addTokens(usage.inputTokens + usage.outputTokens),
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
    const reply = leaks().redact(result.reply, { ...leakScope(), where: "reply" });
    return {
      reply,
      session: key.session,
      tools: result.tools,
      ...(files.length ? { files } : {}),
    };
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
    meter.end(); // its usage goes with the flush below; a late charge is committed at once
    await sessions.flush();
  }
}

/** Where the turn's tools see files: the owner's on the host, everyone else's in the sandbox. */
function workspaceSeenBy(trust: TrustLevel, config: CoopConfig): string {
  return trust === "owner" ? config.agent.workspace : SANDBOX_WORKSPACE_MOUNT;
}
