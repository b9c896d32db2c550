// Sandbox networking as the gateway configures it: `coop check` warns about IP-literal consent
// entries and `network = "host"` for non-owners, and the executor tells every sandbox which
// sockets are the gateway's own (never dialed by the proxy).
import { deepStrictEqual, ok, strictEqual } from "node:assert/strict";
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { gatewaySockets } from "../../src/config/gateway_sockets.ts";
import { ToolExecutor } from "../../src/tools/tool_executor.ts";
import type { ExecOptions, SandboxPolicyInput } from "../../src/sandbox/mod.ts";
import { availableProbe, checkText } from "../fixtures/check_run.ts";
import { commandResult } from "../fixtures/command_result.ts";

const BASE = `
[agent]
workspace = "ws"
[[users]]
name = "alice"
trust = "owner"
match = ["terminal:default"]
[[users]]
name = "bob"
trust = "inner"
match = ["http:bob"]
`;

async function check(text: string): Promise<{ code: number; lines: string[] }> {
  const { code, output } = await checkText(text, [], availableProbe, {});
  return { code, lines: output.split("\n") };
}

const warnings = (lines: string[], code: RegExp) => lines.filter((l) => code.test(l));

Deno.test("coop check: one warning per IP-literal entry that consents to a private service", async () => {
  const { code, lines } = await check(
    BASE.replace(
      'match = ["http:bob"]',
      'match = ["http:bob"]\n[users.sandbox]\nnetwork = "proxy"\n' +
        'allow_domains = ["pypi.org", "10.0.0.5:8080", "[fd12:3456::5]:443", "93.184.216.34"]',
    ) +
      '[[cron]]\nname = "nightly"\nschedule = "0 3 * * *"\nuser = "bob"\nmessage = "go"\n' +
      '[cron.sandbox]\nallow_domains = ["[::ffff:127.0.0.1]:11434"]\n' +
      '[sandbox]\nnetwork = "proxy"\nallow_domains = ["192.168.1.20:80"]\n',
  );
  strictEqual(code, 0, lines.join("\n"));
  const consent = lines.filter((l) => l.includes("the proxy dials it only because"));
  // The range, unless this machine happens to be on that subnet: then the on-link rule names it.
  const expected: Array<[string, string, string]> = [
    [
      'sandbox.allow_domains[0]: "192.168.1.20:80" lets every sandboxed sender without a ' +
      "network of their own (unknown senders) reach 192.168.1.20 on port 80",
      "private (192.168.0.0/16)",
      "on-link: in 192.168.",
    ],
    [
      'users[1].sandbox.allow_domains[1]: "10.0.0.5:8080" lets user "bob" reach 10.0.0.5 on ' +
      "port 8080",
      "private (10.0.0.0/8)",
      "on-link: in 10.",
    ],
    [
      'users[1].sandbox.allow_domains[2]: "[fd12:3456::5]:443" lets user "bob" reach ' +
      "fd12:3456::5 on port 443",
      "unique local (fc00::/7)",
      "on-link: in fd12:3456:",
    ],
    [
      'cron[0].sandbox.allow_domains[0]: "[::ffff:127.0.0.1]:11434" lets cron job "nightly" ' +
      '(user "bob") reach 127.0.0.1 on port 11434',
      "loopback (127.0.0.0/8)",
      "loopback (127.0.0.0/8)",
    ],
  ];
  strictEqual(consent.length, expected.length, consent.join("\n"));
  expected.forEach(([head, range, onLink], i) => {
    const line = consent[i];
    ok(line.startsWith(`warning: coop.toml: ${head}, `), line);
    const why = line.slice(`warning: coop.toml: ${head}, `.length);
    ok(why.startsWith(range) || why.startsWith(onLink), line);
    ok(
      why.endsWith(
        ": the proxy dials it only because this IP-literal entry names it. Make sure that " +
          "service is meant for them",
      ),
      line,
    );
  });
  ok(!lines.some((l) => l.includes("pypi.org") || l.includes("93.184.216.34")), "public: quiet");
});

Deno.test("coop check: entries no consent can reach — metadata, the gateway's own socket", async () => {
  const { code, lines } = await check(
    BASE +
      '[sandbox]\nnetwork = "proxy"\nallow_domains = ["169.254.169.254", "127.0.0.1:8787"]\n' +
      '[channels.http]\nenabled = true\nlisten = "127.0.0.1:8787"\n',
  );
  strictEqual(code, 0);
  deepStrictEqual(warnings(lines, /never dialed/), [
    'warning: coop.toml: sandbox.allow_domains[0]: "169.254.169.254" (every sandboxed sender ' +
    "without a network of their own (bob, unknown senders)) is never dialed, not even as an " +
    "IP-literal entry: 169.254.169.254:80 is link-local or cloud metadata (169.254.0.0/16); " +
    "remove it",
    'warning: coop.toml: sandbox.allow_domains[1]: "127.0.0.1:8787" (every sandboxed sender ' +
    "without a network of their own (bob, unknown senders)) is never dialed, not even as an " +
    "IP-literal entry: 127.0.0.1:8787 is a socket of the Coop gateway itself; remove it",
  ]);
});

Deno.test('coop check: network = "host" for anyone but the owner is named, user or cron job', async () => {
  const { code, lines } = await check(
    BASE +
      '[[users]]\nname = "cy"\ntrust = "full"\n[users.sandbox]\nnetwork = "host"\n' +
      '[[users]]\nname = "dee"\ntrust = "familiar"\n[users.sandbox]\nnetwork = "none"\n' +
      '[[cron]]\nname = "sync"\nschedule = "0 3 * * *"\nuser = "dee"\nmessage = "go"\n' +
      '[cron.sandbox]\nnetwork = "host"\n' +
      '[[cron]]\nname = "mine"\nschedule = "0 4 * * *"\nuser = "alice"\nmessage = "go"\n' +
      '[cron.sandbox]\nnetwork = "host"\n' +
      '[sandbox]\nnetwork = "host"\n',
  );
  strictEqual(code, 0);
  const host = warnings(lines, /network = "host" gives/).map((l) => l.split(" gives ")[0]);
  deepStrictEqual(host, [
    'warning: coop.toml: sandbox.network: network = "host"',
    'warning: coop.toml: users[2].sandbox.network: network = "host"',
    'warning: coop.toml: cron[0].sandbox.network: network = "host"',
  ]);
  const all = warnings(lines, /network = "host" gives/);
  ok(all[0].includes("(bob, unknown senders)"), all[0]);
  ok(all[1].includes('user "cy"'));
  ok(all[2].includes('cron job "sync" (user "dee")'));
  for (const line of all) {
    ok(line.includes("loopback services") && line.includes("abstract unix socket names"), line);
  }
  const owner = await check(
    BASE.replace(
      'match = ["terminal:default"]',
      'match = ["terminal:default"]\n[users.sandbox]\nnetwork = "host"',
    ),
  );
  strictEqual(warnings(owner.lines, /network = "host"/).length, 0, "the owner's own choice");
});

Deno.test("the executor gives every sandbox the gateway's sockets, and never the proxy's test hooks", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-netexec-" }));
  try {
    const text = BASE +
      '[sandbox]\nnetwork = "proxy"\nallow_domains = ["127.0.0.1:11434"]\n' +
      "max_connections = 16\n" +
      '[channels.http]\nenabled = true\nlisten = "localhost:8787"\n';
    const config = parseConfig(text, join(dir, "coop.toml"), dir);
    deepStrictEqual(gatewaySockets(config), ["0.0.0.0:8787"], "a name is any own address");
    const seen: Array<{ policy: SandboxPolicyInput; options: ExecOptions }> = [];
    const executor = new ToolExecutor(config, {
      env: {},
      sandbox: (policy, _argv, options) => {
        seen.push({ policy, options });
        return Promise.resolve(commandResult());
      },
    });
    const r = await executor.call({
      principal: { name: "bob", trust: "inner" },
      situation: { channel: "http", ceiling: null, contributors: [] },
      user: config.users[1],
      tool: "bash",
      args: { command: "curl http://127.0.0.1:11434/" },
    });
    strictEqual(r.isError, false, r.content);
    strictEqual(seen[0].policy.proxyNeverDial?.[0], "0.0.0.0:8787");
    strictEqual(seen[0].policy.proxyMaxConnections, 16);
    deepStrictEqual(seen[0].policy.allowDomains, ["127.0.0.1:11434"]);
    strictEqual("proxy" in seen[0].options, false, "no resolver or private-address override");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
  const ipv6 = parseConfig(
    BASE + '[channels.http]\nenabled = true\nlisten = "[::1]:0"\n',
    "/tmp/coop.toml",
    "/tmp",
  );
  deepStrictEqual(gatewaySockets(ipv6), ["[::1]:0"], "port 0: every port");
  deepStrictEqual(gatewaySockets(parseConfig(BASE, "/tmp/coop.toml", "/tmp")), []);
});

Deno.test("only the sandbox library and tests name the proxy's test hooks", async () => {
  // ExecOptions.proxy (resolver, allowPrivateAddresses, publicAddresses) has no config key
  // and no flag: no module outside src/sandbox may set it.
  const src = new URL("../../src", import.meta.url).pathname;
  const offenders: string[] = [];
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory) {
        if (path !== `${src}/sandbox`) await walk(path);
      } else if (path.endsWith(".ts")) {
        const text = await Deno.readTextFile(path);
        if (/allowPrivateAddresses|publicAddresses|publicForTests|ProxyTestHooks/.test(text)) {
          offenders.push(path);
        }
      }
    }
  };
  await walk(src);
  deepStrictEqual(offenders, []);
});
