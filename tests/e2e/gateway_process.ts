/**
 * Runs the real `coop` CLI as a child process for end-to-end tests: a temporary directory with
 * the config, workspace and state; `coop start` waited on until its HTTP channel listens.
 * @module
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { openStateDb } from "../../src/state/state_db.ts";
import {
  type SessionKey,
  SessionStore,
  type StoredMessage,
} from "../../src/state/session_store.ts";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

/** A temporary Coop home: config file, workspace, state directory. */
export interface CoopHome {
  dir: string;
  config: string;
  stateDir: string;
  /** Environment for a coop process: nothing of the test's but what Deno needs, plus `extra`. */
  env(extra?: Record<string, string>): Record<string, string>;
}

function passThrough(names: string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of names) {
    const value = Deno.env.get(name);
    if (value !== undefined) out[name] = value;
  }
  return out;
}

/** Writes `configText` (with `{{dir}}` replaced) into a fresh temporary directory. */
export async function makeCoopHome(configText: string): Promise<CoopHome> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-e2e-" }));
  // Unprivileged runs must be able to create the per-user workspace directories.
  await Deno.chmod(dir, 0o755);
  const config = join(dir, "coop.toml");
  await Deno.writeTextFile(config, configText.replaceAll("{{dir}}", dir));
  return {
    dir,
    config,
    stateDir: join(dir, "state"),
    env: (extra = {}) => ({
      ...passThrough(["PATH", "HOME", "DENO_DIR", "DENO_TLS_CA_STORE", "COOP_SANDBOX_LIB"]),
      // The self-test record lives here, so each test measures its own sandbox.
      XDG_STATE_HOME: join(dir, "xdg-state"),
      NO_COLOR: "1",
      COOP_LOG: "info",
      ...extra,
    }),
  };
}

/** The argv that runs the coop CLI with the test's own Deno. */
export function coopArgv(...args: string[]): string[] {
  return [Deno.execPath(), "run", "--allow-all", "--no-prompt", MAIN, ...args];
}

/** A running `coop start`. */
export interface GatewayProcess {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  child: Deno.ChildProcess;
  /** Everything the process wrote to stderr so far. */
  stderr(): string;
  /** Resolves with the exit status once the process ends. */
  status: Promise<Deno.CommandStatus>;
}

/** How to run the gateway process beyond its environment. */
export interface GatewayProcessOptions {
  /** `ulimit -n` for the process (soft and hard: Deno raises its soft limit to the hard one). */
  fileLimit?: number;
  /** Close our end of its stderr once it listens, so its later writes there fail with EPIPE. */
  closeStderrWhenListening?: boolean;
  /**
   * Run another checkout's CLI (its `src/cli/main.ts`, with its `deno.json`) and/or with these
   * flags before the script: the load benchmark's A/B comparisons. Default: this checkout's.
   */
  runtime?: { checkout?: string; denoFlags?: string[] };
}

/** Starts `coop start --config` and waits until it prints its HTTP address. */
export async function startGateway(
  home: CoopHome,
  env: Record<string, string> = {},
  options: GatewayProcessOptions = {},
): Promise<GatewayProcess> {
  const { checkout, denoFlags = [] } = options.runtime ?? {};
  const argv = options.runtime
    ? [
      Deno.execPath(),
      "run",
      "--allow-all",
      "--no-prompt",
      ...(checkout ? ["--config", join(checkout, "deno.json")] : []),
      ...denoFlags,
      checkout ? join(checkout, "src/cli/main.ts") : MAIN,
      "start",
      "--config",
      home.config,
    ]
    : coopArgv("start", "--config", home.config);
  const [cmd, ...args] = options.fileLimit === undefined
    ? argv
    : ["sh", "-c", `ulimit -n ${options.fileLimit} && exec "$@"`, "sh", ...argv];
  const child = new Deno.Command(cmd, {
    args,
    env: home.env(env),
    clearEnv: true,
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  let announce = (_url: string) => {};
  const announced = new Promise<string>((resolve) => announce = resolve);
  const reading = (async () => {
    const decoder = new TextDecoder();
    for await (const chunk of child.stderr) {
      text += decoder.decode(chunk, { stream: true });
      // To the line's end: a chunk may end inside the address.
      const match = /http channel on (http:\/\/\S+)\n/.exec(text);
      if (match) announce(match[1]);
      if (match && options.closeStderrWhenListening) break; // cancels the stream: pipe closed
    }
  })();
  const status = child.status.then(async (s) => {
    await reading;
    return s;
  });
  const url = await Promise.race([
    announced,
    status.then((s) => {
      throw new Error(`coop start exited (${s.code}) before listening:\n${text}`);
    }),
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`coop start did not listen in 60 s:\n${text}`)), 60_000)
    ),
  ]);
  return { url, child, stderr: () => text, status };
}

/** Sends a message to the HTTP channel as the bearer of `token`. */
export async function postMessage(
  url: string,
  token: string | null,
  body: Record<string, unknown>,
  signal?: AbortSignal,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${url}/v1/messages`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      ...(token === null ? {} : { authorization: `Bearer ${token}` }),
    },
    body: JSON.stringify(body),
    signal,
  });
  return { status: response.status, json: await response.json() };
}

/** Kills a gateway that is still running (test cleanup). */
export async function stopGateway(gateway: GatewayProcess): Promise<void> {
  try {
    gateway.child.kill("SIGKILL");
  } catch {
    // Already gone.
  }
  await gateway.status;
}

/** Waits until `done()` holds, polling every 20 ms; throws naming `what` after `ms`. */
export async function until(what: string, done: () => boolean, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** One session's stored history in `home`'s state database (read after the gateway ended). */
export function sessionHistory(home: CoopHome, key: SessionKey): StoredMessage[] {
  const db = openStateDb(home.stateDir);
  try {
    return new SessionStore(db).history(key);
  } finally {
    db.close();
  }
}
