/**
 * `coop check`: `timeout` above `max_timeout` in every table that can set them — `[sandbox]`,
 * `[users.sandbox]` and `[cron.sandbox]` — as the runtime merges them for a call
 * (`ToolExecutor.settingsFor`: `[sandbox]`, then the user's, then the cron job's).
 * @module
 */
import { formatDuration } from "../sandbox/duration.ts";
import type { CoopConfig } from "./config.ts";
import { type ConfigDiagnostic, configError } from "./config_diagnostic.ts";
import { DEFAULT_MAX_TIMEOUT_MS, DEFAULT_TIMEOUT_MS } from "./sandbox_settings.ts";

/** One table of the merge, as a TOML author finds it, with the timeouts it sets itself. */
interface TimeoutLayer {
  /** How the author finds the table: `[[cron]] name = "nightly" → [cron.sandbox]`. */
  table: string;
  /** Its key path, e.g. `cron[0].sandbox`. */
  path: string;
  timeoutMs?: number;
  maxTimeoutMs?: number;
}

/** The value the merge ends with for `key`, and the table that set it (none: Coop's default). */
function resolved(
  layers: readonly TimeoutLayer[],
  key: "timeoutMs" | "maxTimeoutMs",
  fallback: number,
): { ms: number; from: TimeoutLayer | null } {
  for (let i = layers.length - 1; i >= 0; i--) {
    const ms = layers[i][key];
    if (ms !== undefined) return { ms, from: layers[i] };
  }
  return { ms: fallback, from: null };
}

/**
 * Checks the merge of `layers` as the last of them sees it. A last layer that sets neither key
 * merges to what the layer beneath has, which is checked (and reported) on its own.
 */
function checkLayers(layers: readonly TimeoutLayer[], out: ConfigDiagnostic[]): void {
  const top = layers[layers.length - 1];
  if (top.timeoutMs === undefined && top.maxTimeoutMs === undefined) return;
  const timeout = resolved(layers, "timeoutMs", DEFAULT_TIMEOUT_MS);
  const max = resolved(layers, "maxTimeoutMs", DEFAULT_MAX_TIMEOUT_MS);
  if (timeout.ms <= max.ms) return;
  const shown = (value: { ms: number; from: TimeoutLayer | null }) =>
    formatDuration(value.ms) +
    (value.from === top ? "" : value.from ? `, from ${value.from.table}` : ", Coop's default");
  // Name the key this table sets: the one to change here (with both set, timeout).
  const comparison = top.timeoutMs !== undefined
    ? `timeout (${shown(timeout)}) is above max_timeout (${shown(max)})`
    : `max_timeout (${shown(max)}) is below timeout (${shown(timeout)})`;
  out.push(configError(
    "config.timeout_above_max",
    `${top.path}.${top.timeoutMs !== undefined ? "timeout" : "max_timeout"}`,
    `${top.table} ${comparison}; a bash call without its own timeout would be refused`,
  ));
}

/** `timeout` above `max_timeout` in `[sandbox]`, any user's and any cron job's merged settings. */
export function checkTimeouts(config: CoopConfig, out: ConfigDiagnostic[]): void {
  const sandbox: TimeoutLayer = {
    table: "[sandbox]",
    path: "sandbox",
    timeoutMs: config.raw.sandbox.timeout,
    maxTimeoutMs: config.raw.sandbox.max_timeout,
  };
  checkLayers([sandbox], out);
  const users = new Map(config.users.map((user, i) => {
    const layer: TimeoutLayer = {
      table: `[[users]] name = "${user.name}" → [users.sandbox]`,
      path: `users[${i}].sandbox`,
      timeoutMs: user.sandbox.timeoutMs,
      maxTimeoutMs: user.sandbox.maxTimeoutMs,
    };
    checkLayers([sandbox, layer], out);
    return [user.name, layer] as const;
  }));
  config.cron.forEach((job, i) => {
    const user = users.get(job.user);
    const layer: TimeoutLayer = {
      table: `[[cron]] name = "${job.name}" → [cron.sandbox]`,
      path: `cron[${i}].sandbox`,
      timeoutMs: job.sandbox.timeoutMs,
      maxTimeoutMs: job.sandbox.maxTimeoutMs,
    };
    // An unknown user is an error of its own (checkCron); the job is checked over [sandbox].
    checkLayers(user ? [sandbox, user, layer] : [sandbox, layer], out);
  });
}
