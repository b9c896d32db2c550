/**
 * `lifetime = "session"` through the gateway and the real sandbox (as root and unprivileged):
 * bob's server started by one tool call answers the next call of the same chat session; `coop
 * sandbox ps` (the real CLI) lists the live sandbox; `/clear` ends it, and `coop sandbox stop`
 * ends another — no process of either remains on the host.
 */
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch } from "../assert.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import {
  type ScriptedServer,
  type ScriptStep,
  withScriptedServer,
} from "../agent/scripted_server.ts";
import { coopToml } from "../e2e/coop_toml.ts";
import { type CoopConfig, parseConfig } from "../../src/config/config.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { listLiveSandboxes } from "../../src/tools/live_sandbox_files.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { configChanges } from "../../src/config/config_changes.ts";

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

async function coop(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", main, ...args],
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

function ended(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).startsWith("Z");
  } catch {
    return true;
  }
}

async function waitFor(check: () => boolean, ms: number): Promise<boolean> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (check()) return true;
    await new Promise((r) => setTimeout(r, 20));
  }
  return check();
}

/** What `withSessionGateway` hands a test. */
interface SessionGateway {
  gateway: Gateway;
  config: CoopConfig;
  server: ScriptedServer;
  dir: string;
  /** `<dir>/coop.toml`, holding the config the gateway was opened with. */
  file: string;
  /** The config again with `bobExtra` in bob's sandbox table (what a reload would read). */
  reparse(bobExtra: string): CoopConfig;
}

/** The `[users.sandbox]` table that gives a person a live sandbox per chat session. */
const LIVE = `[users.sandbox]\nlifetime = "session"\nidle_timeout = "10m"\n`;

/**
 * Runs `fn` against a gateway opened on `configText(providerUrl, "")` (`{{dir}}` filled in), with
 * a scripted provider playing `script`, in a fresh directory `prefix*`; then drains and closes
 * the gateway and removes the directory.
 */
async function withSessionGateway(
  prefix: string,
  script: readonly ScriptStep[],
  configText: (providerUrl: string, bobExtra: string) => string,
  fn: (t: SessionGateway) => Promise<void>,
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix }));
  await Deno.chmod(dir, 0o755);
  try {
    await withScriptedServer(script, async (server) => {
      const text = (bobExtra: string) =>
        configText(server.url, bobExtra).replaceAll("{{dir}}", dir);
      const file = join(dir, "coop.toml");
      await Deno.writeTextFile(file, text(""));
      const config = parseConfig(text(""), file, dir);
      const gateway = Gateway.open(config, { executor: { env: { PATH: "/usr/bin:/bin" } } });
      try {
        await fn({
          gateway,
          config,
          server,
          dir,
          file,
          reparse: (b) => parseConfig(text(b), file, dir),
        });
      } finally {
        await gateway.drain();
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const SERVE = "cd /work && python3 -m http.server 8000 >/dev/null 2>&1 & echo serving";
const FETCH = "for i in $(seq 300); do curl -sf http://127.0.0.1:8000/page.txt && exit 0; " +
  "sleep 0.05; done; exit 1";

sandboxTest(
  "lifetime = session: a server from one tool call answers the next; ps, stop and /clear end them",
  async () => {
    const script = [
      format.toolCall("c1", "bash", [JSON.stringify({ command: SERVE })]),
      format.text(["started"]),
      format.toolCall("c2", "bash", [JSON.stringify({ command: FETCH })]),
      format.text(["fetched"]),
      format.toolCall("c3", "bash", [JSON.stringify({ command: "sleep 1000 & echo other" })]),
      format.text(["other"]),
    ];
    const toml = (url: string) => coopToml({ kind: "anthropic", baseUrl: url, bob: LIVE });
    await withSessionGateway(
      "coop-session-gw-",
      script,
      toml,
      async ({ gateway, config, server, dir, file }) => {
        const stateDir = config.agent.stateDir;
        const bob = { channel: "http", sender: "bob", session: "s1" };
        await Deno.mkdir(join(dir, "workspace", "bob"), { recursive: true });
        await Deno.writeTextFile(join(dir, "workspace", "bob", "page.txt"), "bob's page\n");
        const first = await gateway.handle({ ...bob, text: "start a server" });
        assertEquals(first.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        const second = await gateway.handle({ ...bob, text: "fetch it" });
        assertEquals(second.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        assertMatch(
          JSON.stringify(format.messages(server.requests[3].body).at(-1)),
          /bob's page/,
        );

        const other = await gateway.handle({ ...bob, session: "s2", text: "another" });
        assertEquals(other.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        const live = listLiveSandboxes(stateDir);
        assertEquals(live.map((s) => [s.user, s.session]).sort(), [
          ["bob", "http:s1"],
          ["bob", "http:s2"],
        ]);

        const ps = await coop("sandbox", "ps", "--json", "--config", file);
        assertEquals(ps.code, 0, ps.stderr);
        const listed = JSON.parse(ps.stdout) as {
          id: string;
          session: string;
          processes: number;
        }[];
        assertEquals(listed.length, 2);
        const s1 = listed.find((s) => s.session === "http:s1")!;
        assert(s1.processes >= 2, `init and server: ${JSON.stringify(s1)}`);
        const table = await coop("sandbox", "ps", "--config", file);
        assertMatch(table.stdout, /ID\s+USER\s+SESSION\s+AGE\s+PROCESSES\s+MEMORY/);

        // coop sandbox stop ends s2's sandbox; the gateway notices and forgets it.
        const s2 = live.find((s) => s.session === "http:s2")!;
        const stop = await coop("sandbox", "stop", s2.id, "--config", file);
        assertEquals(stop.code, 0, stop.stderr);
        assert(ended(s2.pid), "the stopped init is gone");
        assert(await waitFor(() => gateway.sessionSandboxes.size === 1, 15_000), "forgotten");
        const unknown = await coop("sandbox", "stop", "nosuchid", "--config", file);
        assertEquals(unknown.code, 1);

        // /clear ends s1's sandbox and its server.
        const s1pid = live.find((s) => s.session === "http:s1")!.pid;
        gateway.clearSession("http", "bob", "s1");
        assert(await waitFor(() => ended(s1pid), 15_000), "the cleared session's init is gone");
        assert(await waitFor(() => listLiveSandboxes(stateDir).length === 0, 15_000));
        assertEquals(gateway.sessionSandboxes.size, 0);
      },
    );
  },
);

sandboxTest(
  "a reload that changes a person's settings ends their live sandbox (it kept the old policy)",
  async () => {
    const script = [
      format.toolCall("c1", "bash", [JSON.stringify({ command: "sleep 1000 & echo started" })]),
      format.text(["started"]),
      format.toolCall("c2", "bash", [JSON.stringify({ command: "sleep 1000 & echo carol" })]),
      format.text(["carol started"]),
    ];
    const toml = (url: string, bobNetwork: string) =>
      coopToml({ kind: "anthropic", baseUrl: url, bob: LIVE + bobNetwork }).replace(
        'name = "carol"\ntrust = "familiar"\nmatch = ["http:carol"]',
        `name = "carol"\ntrust = "inner"\nmatch = ["http:carol"]\n${LIVE}`,
      );
    await withSessionGateway(
      "coop-session-reload-",
      script,
      toml,
      async ({ gateway, config, reparse }) => {
        await gateway.handle({ channel: "http", sender: "bob", session: "s1", text: "go" });
        await gateway.handle({ channel: "http", sender: "carol", session: "s1", text: "go" });
        const live = listLiveSandboxes(config.agent.stateDir);
        assertEquals(live.map((s) => s.user).sort(), ["bob", "carol"]);
        const bobPid = live.find((s) => s.user === "bob")!.pid;
        const next = reparse('network = "public"\n');
        gateway.reconfigure(next, configChanges(config, next));
        assert(
          await waitFor(() => ended(bobPid), 15_000),
          "bob's sandbox, started under the old policy, ended",
        );
        assertEquals(
          listLiveSandboxes(config.agent.stateDir).map((s) => s.user),
          ["carol"],
          "carol's settings did not change: her sandbox runs on",
        );
      },
    );
  },
);

sandboxTest(
  "in a group, each member's live sandbox is their own, and a reload that changes them ends it",
  async () => {
    const script = [
      format.toolCall("c1", "bash", [JSON.stringify({ command: "sleep 1000 & echo bob" })]),
      format.text(["bob started"]),
      format.toolCall("c2", "bash", [JSON.stringify({ command: "sleep 1000 & echo carol" })]),
      format.text(["carol started"]),
    ];
    const toml = (url: string, bobNetwork: string) =>
      coopToml({
        kind: "anthropic",
        baseUrl: url,
        bob: LIVE + bobNetwork,
        extra: '[[groups]]\nname = "family"\nmatch = ["telegram:-100"]\ntrust = "inner"\n',
      }).replace('match = ["http:bob"]', 'match = ["http:bob", "telegram:4242"]')
        .replace(
          'name = "carol"\ntrust = "familiar"\nmatch = ["http:carol"]',
          `name = "carol"\ntrust = "inner"\nmatch = ["telegram:5151"]\n${LIVE}`,
        );
    await withSessionGateway(
      "coop-session-group-",
      script,
      toml,
      async ({ gateway, config, reparse }) => {
        const inGroup = { channel: "telegram", group: "-100", addressed: true, session: "tg-100" };
        const bob = await gateway.handle({ ...inGroup, sender: "4242", text: "go" });
        assertEquals(bob.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        const carol = await gateway.handle({ ...inGroup, sender: "5151", text: "go" });
        assertEquals(carol.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        // Same group, same ceiling, same workspace: still one sandbox per member, each under
        // the member's name (never one shared by whoever spoke last).
        const live = listLiveSandboxes(config.agent.stateDir);
        assertEquals(live.map((s) => [s.user, s.session]).sort(), [
          ["bob", "telegram:group:-100"],
          ["carol", "telegram:group:-100"],
        ]);
        const bobPid = live.find((s) => s.user === "bob")!.pid;
        assert(!ended(bobPid), "bob's sandbox outlived carol's turn");
        const next = reparse('network = "public"\n');
        gateway.reconfigure(next, configChanges(config, next));
        assert(
          await waitFor(() => ended(bobPid), 15_000),
          "bob's group sandbox, started under the old policy, ended",
        );
        assertEquals(listLiveSandboxes(config.agent.stateDir).map((s) => s.user), ["carol"]);
      },
    );
  },
);
