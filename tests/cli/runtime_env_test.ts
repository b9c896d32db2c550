/**
 * The launchers give the Coop process the settings of `scripts/runtime.env` (V8 flags, malloc
 * arenas): `./coop` and `deno task coop` both, read back from the running gateway's
 * `/proc/PID/environ`; `compile.ts` reads the same file (`readRuntimeEnv`).
 */
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { readRuntimeEnv } from "../../scripts/runtime_env.ts";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const CONFIG = `
[agent]
model = "none/m"
workspace = "ws"
state_dir = "state"
[sandbox]
enabled = false
[[providers]]
name = "none"
kind = "anthropic"
base_url = "http://127.0.0.1:9"
[channels.http]
enabled = true
listen = "127.0.0.1:0"
[[channels.http.tokens]]
id = "owner"
token_env = "OWNER_TOKEN"
`;

/** The environment of `pid` or of its first descendant running `src/cli/main.ts`. */
function gatewayEnviron(pid: number): Record<string, string> {
  const queue = [pid];
  while (queue.length > 0) {
    const next = queue.shift()!;
    const cmdline = Deno.readTextFileSync(`/proc/${next}/cmdline`);
    if (cmdline.includes("src/cli/main.ts")) {
      const environ = Deno.readTextFileSync(`/proc/${next}/environ`).split("\0");
      return Object.fromEntries(
        environ.filter((e) => e.includes("=")).map((
          e,
        ) => [e.slice(0, e.indexOf("=")), e.slice(e.indexOf("=") + 1)]),
      );
    }
    for (const tid of Deno.readDirSync(`/proc/${next}/task`)) {
      let children = "";
      try {
        children = Deno.readTextFileSync(`/proc/${next}/task/${tid.name}/children`).trim();
      } catch {
        continue; // the runtime's idle pool threads exit while we look
      }
      if (children) queue.push(...children.split(" ").map(Number));
    }
  }
  throw new Error(`no process under ${pid} runs src/cli/main.ts`);
}

/** Starts the gateway through `argv` in a fresh directory; returns its environment. */
async function launchedEnviron(
  argv: (config: string) => string[],
): Promise<Record<string, string>> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-runtime-env-" }));
  await Deno.chmod(dir, 0o755);
  await Deno.mkdir(join(dir, "ws"));
  await Deno.writeTextFile(join(dir, "coop.toml"), CONFIG);
  const [cmd, ...args] = argv(join(dir, "coop.toml"));
  const child = new Deno.Command(cmd, {
    args,
    cwd: dir,
    clearEnv: true,
    env: {
      PATH: `${dirname(Deno.execPath())}:/usr/bin:/bin`,
      HOME: Deno.env.get("HOME") ?? dir,
      ...(Deno.env.get("DENO_DIR") ? { DENO_DIR: Deno.env.get("DENO_DIR")! } : {}),
      XDG_STATE_HOME: join(dir, "xdg-state"),
      NO_COLOR: "1",
      OWNER_TOKEN: "token-owner",
    },
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  let text = "";
  try {
    const decoder = new TextDecoder();
    const reader = child.stderr.getReader();
    const deadline = setTimeout(() => reader.cancel(), 60_000);
    while (!/http channel on /.test(text)) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    clearTimeout(deadline);
    assertMatch(text, /http channel on /, "the gateway did not listen");
    const environ = gatewayEnviron(child.pid);
    reader.releaseLock();
    return environ;
  } finally {
    child.kill("SIGTERM");
    await child.stderr.cancel().catch(() => {});
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
}

function assertRuntimeEnv(environ: Record<string, string>): void {
  const expected = readRuntimeEnv();
  assert(Object.keys(expected).length > 0, "scripts/runtime.env sets nothing");
  for (const [name, value] of Object.entries(expected)) assertEquals(environ[name], value, name);
}

Deno.test("runtime.env: sets the V8 flags and malloc arenas, one NAME=value per line", () => {
  const env = readRuntimeEnv();
  assertMatch(env.DENO_V8_FLAGS, /--max-semi-space-size=\d+/);
  assertMatch(env.DENO_V8_FLAGS, /--max-old-space-size=\d+/);
  assertMatch(env.MALLOC_ARENA_MAX, /^\d+$/);
});

Deno.test("./coop start runs the gateway with scripts/runtime.env", async () => {
  assertRuntimeEnv(
    await launchedEnviron((config) => [join(ROOT, "coop"), "start", "--config", config]),
  );
});

Deno.test("deno task coop start runs the gateway with scripts/runtime.env", async () => {
  assertRuntimeEnv(
    await launchedEnviron((config) => [
      Deno.execPath(),
      "task",
      "--quiet",
      "--config",
      join(ROOT, "deno.json"),
      "coop",
      "start",
      "--config",
      config,
    ]),
  );
});
