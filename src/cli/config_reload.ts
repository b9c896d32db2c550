/**
 * Live config for `coop start`: `coop.toml` is reloaded when it changes (a file watch, debounced)
 * and on SIGHUP. The new file is checked exactly as `coop check` checks it; with an error the
 * running config stays and every error is logged with its file and key; otherwise it is applied
 * at once (`apply`) and a `config.reload` line says what changed — section and names, never a
 * value. What cannot change under a running gateway (the state directory) is refused.
 * @module
 */
import { basename, dirname, resolve } from "node:path";
import { getLogger } from "@logtape/logtape";
import { errorMessage } from "../errors/coop_error.ts";
import { type CoopConfig, loadConfig } from "../config/config.ts";
import { diagnoseConfig } from "./config_diagnostics.ts";
import { type ConfigDiagnostic, ConfigError } from "../config/config_diagnostic.ts";
import { type ConfigChanges, configChanges, hasChanges } from "../config/config_changes.ts";

const log = getLogger(["coop", "config"]);

/** Waits this long after the last change before reading (editors write in several steps). */
export const RELOAD_DEBOUNCE_MS = 200;

/** What a reload does with a config that passed the checks. */
export type ApplyConfig = (config: CoopConfig, changes: ConfigChanges) => Promise<string[]>;

/** The outcome of one reload, for tests. */
export type ReloadResult = "applied" | "unchanged" | "rejected";

/**
 * Watches one config file and reloads it.
 *
 * @example
 * ```ts
 * const reloader = new ConfigReloader(file, config, async (next) => { gateway.reconfigure(next); return []; });
 * reloader.start();
 * reloader.stop();
 * ```
 */
export class ConfigReloader {
  readonly #file: string;
  readonly #apply: ApplyConfig;
  #current: CoopConfig;
  #watcher: Deno.FsWatcher | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #chain: Promise<unknown> = Promise.resolve();
  readonly #onSighup = () => void this.reload("SIGHUP");

  constructor(file: string, current: CoopConfig, apply: ApplyConfig) {
    this.#file = resolve(file);
    this.#current = current;
    this.#apply = apply;
  }

  /** The config running now. */
  get current(): CoopConfig {
    return this.#current;
  }

  /** Starts watching the file's directory (editors replace files) and listening for SIGHUP. */
  start(): void {
    Deno.addSignalListener("SIGHUP", this.#onSighup);
    try {
      this.#watcher = Deno.watchFs(dirname(this.#file), { recursive: false });
    } catch (error) {
      log.warning("config.watch_failed {file}: {reason}; SIGHUP still reloads", {
        event: "config.watch_failed",
        file: this.#file,
        reason: errorMessage(error),
      });
      return;
    }
    const name = basename(this.#file);
    (async () => {
      for await (const event of this.#watcher!) {
        if (!event.paths.some((p) => basename(p) === name)) continue;
        clearTimeout(this.#timer);
        this.#timer = setTimeout(() => void this.reload("file changed"), RELOAD_DEBOUNCE_MS);
      }
    })().catch(() => {});
  }

  /** Stops watching and waits for a reload in progress. */
  async stop(): Promise<void> {
    Deno.removeSignalListener("SIGHUP", this.#onSighup);
    clearTimeout(this.#timer);
    try {
      this.#watcher?.close();
    } catch {
      // Already closed.
    }
    await this.#chain;
  }

  /** Reloads now (one reload at a time); never throws. */
  reload(reason: string): Promise<ReloadResult> {
    const next = this.#chain.then(() => this.#reload(reason));
    this.#chain = next.catch(() => {});
    return next;
  }

  async #reload(reason: string): Promise<ReloadResult> {
    let config: CoopConfig;
    try {
      config = await loadConfig(this.#file);
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      this.#rejected(reason, error.diagnostics);
      return "rejected";
    }
    const diagnostics = diagnoseConfig(config);
    if (config.agent.stateDir !== this.#current.agent.stateDir) {
      diagnostics.push({
        severity: "error",
        code: "config.reload_state_dir",
        path: "agent.state_dir",
        message: "cannot change while coop start runs (its database and lock are open there); " +
          "restart coop start to move it",
      });
    }
    if (diagnostics.some((d) => d.severity === "error")) {
      this.#rejected(reason, diagnostics.filter((d) => d.severity === "error"));
      return "rejected";
    }
    for (const d of diagnostics) {
      log.warning("config.warning {file}: {path}: {message}", {
        event: "config.warning",
        file: this.#file,
        path: d.path,
        code: d.code,
        message: d.message,
      });
    }
    const changes = configChanges(this.#current, config);
    if (!hasChanges(changes)) {
      log.debug("config.reload unchanged ({reason})", { event: "config.reload", reason });
      return "unchanged";
    }
    this.#current = config;
    const channels = await this.#apply(config, changes);
    log.info(
      "config.reload ({reason}): users {users}, groups {groups}, sandbox {sandbox}, channels " +
        "{channels}, other {other}",
      {
        event: "config.reload",
        file: this.#file,
        reason,
        users: changes.users,
        groups: changes.groups,
        sandbox: changes.sandbox ? "changed" : "unchanged",
        channels: changes.channels,
        other: changes.other,
        applied: channels,
      },
    );
    return "applied";
  }

  #rejected(reason: string, errors: readonly ConfigDiagnostic[]): void {
    for (const d of errors) {
      log.error("config.reload_rejected {file}: {path}: {message}", {
        event: "config.reload_rejected",
        file: this.#file,
        reason,
        path: d.path,
        code: d.code,
        message: d.message,
      });
    }
    log.error("config.reload_rejected: {file} has errors; the running config stays", {
      event: "config.reload_rejected",
      file: this.#file,
      errors: errors.length,
    });
  }
}
