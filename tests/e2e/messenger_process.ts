/**
 * Runs `coop start` for messenger end-to-end tests (Telegram, Signal): started, waited on until
 * a line of its stderr says it is ready, stopped with a signal. Reusable by the group and pairing
 * tests: `messengerToml` adds the channel tables pointing at the fakes.
 * @module
 */
import { coopArgv, type CoopHome } from "./gateway_process.ts";

/** A running `coop start` without HTTP. */
export interface CoopProcess {
  child: Deno.ChildProcess;
  /** Everything written to stderr so far. */
  stderr(): string;
  /** Waits until stderr matches `pattern` (after `from` characters), or throws after `ms`. */
  waitFor(pattern: RegExp, ms?: number, from?: number): Promise<void>;
  /** Resolves with the exit status. */
  status: Promise<Deno.CommandStatus>;
  /** Sends `signal` and waits for the exit (SIGTERM drains). */
  stop(signal?: Deno.Signal): Promise<Deno.CommandStatus>;
}

/** `[channels.telegram]` and/or `[channels.signal]` for fakes at these URLs. */
export function messengerToml(
  options: { telegram?: string; signal?: { url: string; account: string } },
): string {
  let out = "";
  if (options.telegram) {
    out += `\n[channels.telegram]\nenabled = true\nbot_token_env = "TELEGRAM_BOT_TOKEN"\n` +
      `api_base_url = "${options.telegram}"\n`;
  }
  if (options.signal) {
    out += `\n[channels.signal]\nenabled = true\naccount = "${options.signal.account}"\n` +
      `rpc_url = "${options.signal.url}"\n`;
  }
  return out;
}

/** Starts `coop start --config` and waits for `ready` on its stderr. */
export async function startCoop(
  home: CoopHome,
  env: Record<string, string>,
  ready: RegExp,
): Promise<CoopProcess> {
  const [cmd, ...args] = coopArgv("start", "--config", home.config);
  const child = new Deno.Command(cmd, {
    args,
    env: home.env(env),
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  let text = "";
  const reading = (async () => {
    const decoder = new TextDecoder();
    // stdout is read too: nothing may leak there either.
    const out = (async () => {
      for await (const chunk of child.stdout) text += decoder.decode(chunk, { stream: true });
    })();
    for await (const chunk of child.stderr) text += decoder.decode(chunk, { stream: true });
    await out;
  })();
  const status = child.status.then(async (s) => {
    await reading;
    return s;
  });
  let exited = false;
  status.then(() => exited = true);
  const waitFor = async (pattern: RegExp, ms = 60_000, from = 0) => {
    const deadline = Date.now() + ms;
    while (!pattern.test(text.slice(from))) {
      if (exited) throw new Error(`coop start exited before ${pattern}:\n${text}`);
      if (Date.now() > deadline) throw new Error(`no ${pattern} in ${ms} ms:\n${text}`);
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  await waitFor(ready);
  return {
    child,
    stderr: () => text,
    waitFor,
    status,
    async stop(signal: Deno.Signal = "SIGTERM") {
      try {
        child.kill(signal);
      } catch {
        // Already gone.
      }
      return await status;
    },
  };
}
