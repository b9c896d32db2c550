/**
 * `coop start [--config FILE]`: serves the configured channels (HTTP, Telegram, Signal) and runs
 * the cron jobs until SIGTERM or SIGINT, holding the state directory's lock (one gateway per
 * directory; `coop chat` takes none: its sessions are its own and it runs no cron). `coop.toml`
 * is reloaded when it changes and on SIGHUP (`config_reload.ts`). On a stop signal it drains:
 * turns in flight are cancelled (their sandboxes killed), the channels and the scheduler stop,
 * the state database is closed, and the process exits 0.
 * @module
 */
import { getLogger } from "@logtape/logtape";
import { serveHttpChannel } from "../channels/http_channel.ts";
import type { HttpServer } from "../channels/http_server.ts";
import { CronScheduler } from "../cron/cron_scheduler.ts";
import { parseConfigOption, startGateway, type StartupDependencies } from "./gateway_startup.ts";
import { writeStderr } from "./stderr.ts";
import { connectionCap, openFileLimit } from "./connection_budget.ts";
import { listenFailure } from "./listen_failure.ts";
import { enabledMessengers, MessengerChannels } from "./messenger_channels.ts";
import { ConfigReloader } from "./config_reload.ts";
import {
  settleSandboxCgroups,
  sweepDeadProxyDirs,
  sweepDeadSandboxCgroups,
} from "../sandbox/mod.ts";
import { IdleMemoryRelease, releaseStartupPages } from "./idle_memory_release.ts";

const log = getLogger(["coop", "start"]);

const say = (text: string) => writeStderr(`coop: ${text}\n`);

/** Runs the gateway until a stop signal; returns the exit status. */
export async function startCommand(
  args: string[],
  deps: StartupDependencies = {},
): Promise<number> {
  const file = parseConfigOption(args);
  const started = await startGateway(file, deps, { lockStateDir: true });
  if (typeof started === "number") return started;
  const { config, gateway, db, banner, lock } = started;
  say(banner);
  // What a gateway killed outright left (its sandboxes' cgroups, its proxies' socket
  // directories): nothing else removes them.
  sweepDeadSandboxCgroups();
  await sweepDeadProxyDirs();
  const http = config.channels.http?.enabled ? config.channels.http : undefined;
  if (!http && config.cron.length === 0 && enabledMessengers(config).length === 0) {
    gateway.close();
    lock?.release();
    say(
      `nothing to run in ${file}: enable [channels.http], [channels.telegram] or ` +
        "[channels.signal], or add [[cron]] jobs (the terminal is `coop chat`)",
    );
    return 1;
  }

  const stop = new AbortController();
  const onSignal = () => stop.abort();
  // Before the channel listens: Deno creates its signal driver's descriptors on first use and
  // aborts the process when it cannot (a flood could have taken every descriptor by then).
  Deno.addSignalListener("SIGTERM", onSignal);
  Deno.addSignalListener("SIGINT", onSignal);
  const stopListening = () => {
    Deno.removeSignalListener("SIGTERM", onSignal);
    Deno.removeSignalListener("SIGINT", onSignal);
  };
  const stopped = new Promise<void>((resolve) =>
    stop.signal.addEventListener("abort", () => resolve(), { once: true })
  );

  let server: HttpServer | undefined;
  if (http) {
    const tokens = http.tokens.flatMap((t) => {
      const token = Deno.env.get(t.token_env) ?? "";
      if (token === "") say(`warning: ${t.token_env} is not set; requests as http:${t.id} get 401`);
      return token === "" ? [] : [{ id: t.id, token }];
    });
    const fileLimit = openFileLimit();
    const maxConnections = connectionCap(http.max_connections, fileLimit);
    if (maxConnections < http.max_connections) {
      say(
        `warning: channels.http.max_connections = ${http.max_connections} is more than half ` +
          `the open-file limit (${fileLimit}); holding at most ${maxConnections} connections`,
      );
    }
    try {
      server = serveHttpChannel(http.listen, {
        tokens,
        maxBodyBytes: http.max_body_bytes,
        limits: {
          headersTimeoutMs: http.headers_timeout,
          requestTimeoutMs: http.request_timeout,
          maxConnections,
        },
        handle: gateway.handle,
        status: () => gateway.statusReport(),
      });
    } catch (error) {
      const reason = listenFailure(error, http.listen);
      if (reason === undefined) throw error;
      stopListening();
      gateway.close();
      lock?.release();
      say(`cannot listen on ${http.listen} (channels.http.listen in ${file}): ${reason}`);
      return 1;
    }
    const { hostname, port } = server.addr;
    say(`http channel on http://${hostname.includes(":") ? `[${hostname}]` : hostname}:${port}`);
  }
  const cron = new CronScheduler({ jobs: config.cron, runTurn: gateway.runCronJob });
  cron.start();
  if (config.cron.length) say(`cron: ${config.cron.length} job(s) scheduled`);
  const env = (name: string) => Deno.env.get(name);
  const messengers = new MessengerChannels({ db, handle: gateway.handle, env, say });
  await messengers.apply(config);
  const reloader = new ConfigReloader(file, config, async (next, changes) => {
    // Turns already running keep the config they started with; the next one sees this.
    gateway.reconfigure(next, changes);
    for (const section of ["http", "terminal"]) {
      if (changes.channels.includes(section)) {
        say(`reload: channels.${section} applies after a restart`);
      }
    }
    if (changes.other.includes("cron")) say("reload: [[cron]] applies after a restart");
    return await messengers.apply(next);
  });
  reloader.start();
  const memory = new IdleMemoryRelease();
  memory.start();
  await releaseStartupPages();
  say("ready (SIGTERM or Ctrl-C stops; SIGHUP or saving the config reloads it)");

  await stopped;
  say("stopping: cancelling turns in flight…");
  log.info("gateway.stopping", { event: "gateway.stopping" });
  await reloader.stop();
  await memory.stop();
  // Cancel turns first: an HTTP shutdown waits for its requests, which wait for their turns.
  await Promise.all([gateway.drain(), cron.stop(), messengers.stop({ cancel: true })]);
  await server?.shutdown();
  await settleSandboxCgroups().catch((error) =>
    log.warn("sandbox.cgroup removal at shutdown failed: {error}", { error: String(error) })
  );
  gateway.close();
  lock?.release();
  stopListening();
  say("stopped");
  return 0;
}
