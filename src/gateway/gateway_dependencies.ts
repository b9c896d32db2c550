/**
 * What the gateway may be given instead of the real world: tests inject fakes.
 * @module
 */
import type { DatabaseSync } from "node:sqlite";
import type { ProviderOptions } from "../agent/provider_registry.ts";
import type { ExecutorDependencies } from "../tools/tool_executor.ts";
import type { SessionSandboxes } from "../tools/session_sandboxes.ts";
import type { SyncData } from "../state/wal_flush.ts";

/** What the gateway may be given instead of the real world (tests inject fakes). */
export interface GatewayDependencies {
  /** The executor's dependencies (fake sandbox, host runner, environment). */
  executor?: ExecutorDependencies;
  /** Provider options (environment lookup, retry policy, fetch). */
  provider?: ProviderOptions;
  /** An open state database; default `openStateDb(config.agent.stateDir)`. */
  db?: DatabaseSync;
  /** How the group commit fsyncs the WAL (tests hold one open and count them). */
  walSync?: SyncData;
  /** The clock of pairing codes (expiry, re-sends); default `Date.now`. */
  now?: () => number;
  /** The live sessions' registry (tests: fake sessions). */
  sessionSandboxes?: SessionSandboxes;
}
