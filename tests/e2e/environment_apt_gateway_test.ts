/**
 * Issue 14's acceptance with a real package manager: a `debian:bookworm` environment built by
 * `coop init` (mmdebstrap); Bob runs `apt-get install -y hello` through the policy proxy to
 * the Debian mirror; after a gateway restart, in a new session, `hello` runs for him; Carol, on
 * the same environment, does not have it; the host's /usr is unchanged; `coop sandbox reset
 * --user bob` removes it. Skipped — saying why — when mmdebstrap or the mirror is not here;
 * `environment_gateway_test.ts` proves the same with a stand-in program and always runs.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { assertEquals, assertMatch } from "../assert.ts";
import { withScriptedServer } from "../agent/scripted_server.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import { sandboxTest } from "../sandbox/harness.ts";
import { mmdebstrapMode } from "../../src/environments/debian_base.ts";
import { parseAddress, specialRange } from "../../src/sandbox/proxy/address_policy.ts";
import { runCoop } from "./coop_command.ts";
import { makeCoopHome, postMessage, startGateway, stopGateway } from "./gateway_process.ts";

const MIRROR = "http://deb.debian.org/debian";

/** Why this test cannot run here, or null. */
async function whyNot(): Promise<string | null> {
  if (!["/usr/bin/mmdebstrap", "/bin/mmdebstrap"].some((p) => existsSync(p))) {
    return "mmdebstrap is not installed";
  }
  try {
    mmdebstrapMode();
  } catch (error) {
    return (error as Error).message;
  }
  try {
    const response = await fetch(`${MIRROR}/dists/bookworm/Release`, {
      method: "HEAD",
      signal: AbortSignal.timeout(10_000),
    });
    await response.body?.cancel();
    if (!response.ok) return `the Debian mirror answered ${response.status}`;
  } catch (error) {
    return `the Debian mirror is unreachable (${(error as Error).message})`;
  }
  return null;
}

/**
 * Why apt cannot reach the mirror by name through the policy proxy here, or null when it can:
 * the proxy dials only public addresses for a name, and an intercepting test mirror resolves
 * to a special range. Then apt goes through the proxy to a loopback relay of the mirror,
 * allowed by its IP-literal entry, the way an owner allows one private service.
 */
async function mirrorNotPublic(): Promise<string | null> {
  for (const address of await Deno.resolveDns("deb.debian.org", "A")) {
    const parsed = parseAddress(address);
    const special = parsed && specialRange(parsed);
    if (special) return `deb.debian.org resolves to ${address} (${special}) here`;
  }
  return null;
}

/** Serves GETs of the mirror from 127.0.0.1 (the host resolves and dials it). */
function mirrorRelay(): Deno.HttpServer<Deno.NetAddr> {
  return Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const url = new URL(request.url);
    const upstream = await fetch(`http://deb.debian.org${url.pathname}`);
    const headers = new Headers();
    for (const name of ["content-type", "content-length", "last-modified", "etag"]) {
      const value = upstream.headers.get(name);
      if (value) headers.set(name, value);
    }
    return new Response(upstream.body, { status: upstream.status, headers });
  });
}

/** A loopback port nothing listens on now (the gateway's, so the relay's port stays dialable). */
function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

const skip = Deno.env.get("COOP_SANDBOX_TEST") === "1" ? await whyNot() : null;
if (skip) console.log(`skipping the apt-get environment test: ${skip}`);

function config(baseUrl: string, listenPort: number, allow: string[]): string {
  return `
[agent]
model = "scripted/test-model"
workspace = "{{dir}}/workspace"
state_dir = "{{dir}}/state"

[sandbox]
environment = "Coopfile"
network = "proxy"
allow_domains = ${JSON.stringify(allow)}
timeout = "600s"
memory = "2G"

[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]

[[users]]
name = "bob"
trust = "full"
match = ["http:bob"]

[[users]]
name = "carol"
trust = "full"
match = ["http:carol"]

[[providers]]
name = "scripted"
kind = "${format.kind}"
base_url = "${format.baseUrl(baseUrl)}"

[channels.http]
enabled = true
listen = "127.0.0.1:${listenPort}"
[[channels.http.tokens]]
id = "bob"
token_env = "BOB_TOKEN"
[[channels.http.tokens]]
id = "carol"
token_env = "CAROL_TOKEN"
`;
}

const TOKENS = { BOB_TOKEN: "bob-secret", CAROL_TOKEN: "carol-secret" };

function lastToolResult(body: Record<string, unknown>): string {
  return JSON.stringify(format.messages(body).at(-1));
}

sandboxTest({
  name: "e2e environment: apt-get install in bob's environment stays his, across a restart",
  ignore: skip !== null,
}, async () => {
  const notPublic = await mirrorNotPublic();
  const relay = notPublic ? mirrorRelay() : null;
  if (notPublic) console.log(`  ${notPublic}: apt goes through the proxy to a relay of it`);
  const allow = relay ? [`127.0.0.1:${relay.addr.port}`] : ["deb.debian.org"];
  const sources = relay
    ? `printf 'deb http://127.0.0.1:${relay.addr.port}/debian bookworm main\\n' > ` +
      "/etc/apt/sources.list && rm -f /etc/apt/sources.list.d/* && "
    : "";
  const install = sources +
    "apt-get -o Acquire::Retries=3 update -qq && apt-get -o Acquire::Retries=3 install -y -qq hello >/dev/null && hello";
  const script = [
    format.toolCall("c1", "bash", [JSON.stringify({ command: install, timeout: 600 })]),
    format.text(["installed"]),
    format.toolCall("c2", "bash", [JSON.stringify({ command: "hello" })]),
    format.text(["ran"]),
    format.toolCall("c3", "bash", [JSON.stringify({ command: "hello" })]),
    format.text(["carol tried"]),
    format.toolCall("c4", "bash", [JSON.stringify({ command: "hello" })]),
    format.text(["after reset"]),
  ];
  const hostHello = existsSync("/usr/bin/hello");
  await withScriptedServer(script, async (server) => {
    const home = await makeCoopHome(config(server.url, freePort(), allow));
    await Deno.writeTextFile(join(home.dir, "Coopfile"), '[base]\nimage = "debian:bookworm"\n');
    try {
      const init = await runCoop(home, "init", "--config", home.config);
      assertEquals(init.code, 0, init.stderr.slice(-3000));
      let gateway = await startGateway(home, TOKENS);
      try {
        const first = await postMessage(gateway.url, "bob-secret", { text: "install hello" });
        assertEquals(first.status, 200, JSON.stringify(first.json));
        const result = lastToolResult(server.requests[1].body);
        assertEquals(first.json.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }], result);
        assertMatch(result, /Hello, world!/);
      } finally {
        await stopGateway(gateway);
      }
      gateway = await startGateway(home, TOKENS);
      try {
        const later = await postMessage(gateway.url, "bob-secret", { text: "run hello" });
        assertEquals(later.json.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
        assertMatch(lastToolResult(server.requests[3].body), /Hello, world!/);
        const carol = await postMessage(gateway.url, "carol-secret", { text: "run hello" });
        assertEquals(carol.json.tools, [{ name: "bash", sandboxed: true, exitCode: 127 }]);
        const reset = await runCoop(
          home,
          "sandbox",
          "reset",
          "--user",
          "bob",
          "--config",
          home.config,
        );
        assertMatch(reset.stdout, /removed upper of bob/);
        const after = await postMessage(gateway.url, "bob-secret", { text: "run hello again" });
        assertEquals(after.json.tools, [{ name: "bash", sandboxed: true, exitCode: 127 }]);
      } finally {
        await stopGateway(gateway);
      }
      assertEquals(existsSync("/usr/bin/hello"), hostHello, "the host's /usr is unchanged");
    } finally {
      for (const user of ["bob", "carol"]) {
        await runCoop(home, "sandbox", "reset", "--user", user, "--config", home.config);
      }
      // The base belongs to the sandbox's root; coop sandbox clean removes unreferenced ones.
      await Deno.writeTextFile(home.config, '[agent]\nstate_dir = "state"\n');
      await runCoop(home, "sandbox", "clean", "--config", home.config);
      await Deno.remove(home.dir, { recursive: true });
      await relay?.shutdown();
    }
  });
});
