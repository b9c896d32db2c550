/**
 * A turn as the gateway runs it, from a channel or a cron job.
 * @module
 */
import type { CoopConfig, CronJobConfig } from "../config/config.ts";
import type { ToolExecutor } from "../tools/tool_executor.ts";
import type { Route } from "./router.ts";
import type { IncomingMessage } from "./turn_handler.ts";

/** A turn as the gateway runs it, from a channel or a cron job. */
export interface TurnRequest {
  /** The config the turn runs under from start to end (a reload applies to later turns). */
  config: CoopConfig;
  /** The executor built for that config. */
  executor: ToolExecutor;
  channel: string;
  route: Route;
  /** The session key's user (see `sessionOwner`; `group:<id>` in a group). */
  sessionUser: string;
  /** Whose turn cap it counts against (the sender, also in a group). */
  person: string;
  /** In a group: the chat's id and its directory under the workspace. */
  group?: { id: string; dir: string };
  text: string;
  session?: string;
  cronJob?: CronJobConfig;
  signal?: AbortSignal;
  onEvent?: IncomingMessage["onEvent"];
}
