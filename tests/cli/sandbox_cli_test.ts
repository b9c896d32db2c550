import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";
import { hostProcessesWith, sandboxTest, until } from "../sandbox/harness.ts";

const main = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

async function coop(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", main, ...args],
    stdin: "null",
  }).output();
  const text = new TextDecoder();
  return { code: out.code, stdout: text.decode(out.stdout), stderr: text.decode(out.stderr) };
}

sandboxTest(
  "coop sandbox exec passes output through and exits with the command's status",
  async () => {
    const r = await coop("sandbox", "exec", "--", "sh", "-c", "echo out; echo err >&2; exit 3");
    assertEquals([r.code, r.stdout, r.stderr], [3, "out\n", "err\n"]);
  },
);

sandboxTest("coop sandbox exec: killed by signal 9 exits 137", async () => {
  const r = await coop("sandbox", "exec", "--", "sh", "-c", "kill -9 $$");
  assertEquals(r.code, 137);
});

sandboxTest("coop sandbox exec: timeout exits 124", async () => {
  const r = await coop("sandbox", "exec", "--timeout", "500ms", "--", "sleep", "30");
  assertEquals(r.code, 124);
  assertMatch(r.stderr, /timed out/);
});

for (const json of [false, true]) {
  sandboxTest(
    `coop sandbox exec${json ? " --json" : ""}: SIGTERM ends the sandbox, then coop (143)`,
    async () => {
      // Only the sandboxed sleep has this command line: coop's and sh's have the $((…)).
      const seconds = 5000 + Math.floor(Math.random() * 1000);
      const marker = `sleep ${seconds + 1}`;
      const json_ = json ? ["--json"] : [];
      const child = new Deno.Command(Deno.execPath(), {
        args: ["run", "--allow-all", "--quiet", main, "sandbox", "exec", ...json_, "--", "sh", "-c"]
          .concat(`sleep $((${seconds} + 1))`),
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const output = child.output();
      const running = await until(() => hostProcessesWith(marker).length > 0, 30_000);
      assert(running, "the sandboxed program never started");
      child.kill("SIGTERM");
      const out = await output;
      const stderr = new TextDecoder().decode(out.stderr);
      assertEquals([out.signal, out.code], [null, 143], stderr);
      if (!json) assertMatch(stderr, /coop: SIGTERM: the sandbox was killed/);
      else assertEquals(JSON.parse(new TextDecoder().decode(out.stdout)).signal, "SIGKILL");
      assertEquals(hostProcessesWith(marker), [], "the sandboxed program outlived coop");
    },
  );
}

sandboxTest("coop sandbox exec: a missing command exits 127", async () => {
  const r = await coop("sandbox", "exec", "--", "no-such-command-xyz");
  assertEquals(r.code, 127);
  assertMatch(r.stderr, /no-such-command-xyz/);
});

sandboxTest("coop sandbox exec --json prints one result object", async () => {
  const r = await coop("sandbox", "exec", "--json", "--", "sh", "-c", "echo hi; exit 4");
  assertEquals(r.code, 4);
  const result = JSON.parse(r.stdout);
  assertEquals([result.exitCode, result.signal, result.timedOut, result.stdout], [
    4,
    null,
    false,
    "hi\n",
  ]);
  assert(typeof result.durationMs === "number");
});

sandboxTest(
  "coop sandbox exec: a bad workspace exits 125 naming the step, no stack trace",
  async () => {
    const r = await coop("sandbox", "exec", "--workspace", "/nonexistent/ws", "--", "true");
    assertEquals(r.code, 125);
    assertMatch(r.stderr, /step "mount-workspace"/);
    assertNotIncludes(r.stderr, "    at ");
  },
);

sandboxTest("coop sandbox status --json reports measured checks", async () => {
  const r = await coop("sandbox", "status", "--json");
  assertEquals(r.code, 0);
  const report = JSON.parse(r.stdout);
  assertEquals(report.available, true);
  const byId = Object.fromEntries(
    report.checks.map((c: { id: string; ok: boolean }) => [c.id, c.ok]),
  );
  for (
    const id of [
      "user-namespace",
      "mount-namespace",
      "pid-namespace",
      "network-namespace",
      "capabilities",
      "no-new-privs",
      "environment",
      "file-descriptors",
      "network-capture",
    ]
  ) {
    assertEquals(byId[id], true, id);
  }
});

sandboxTest(
  "coop sandbox exec --memory --pids --json reports the limits and their path",
  async () => {
    const r = await coop(
      "sandbox",
      "exec",
      "--memory",
      "256m",
      "--pids",
      "64",
      "--json",
      "--",
      "true",
    );
    assertEquals(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout);
    assertEquals(result.oomKilled, false);
    assertEquals(result.limits.memory.bytes, 256 * 2 ** 20);
    assertEquals(result.limits.pids.max, 64);
    assertEquals(result.limits.path, Deno.uid() === 0 ? "cgroup-v1" : "rlimit");
  },
);

sandboxTest("coop sandbox status prints ✓/✗ with evidence", async () => {
  const r = await coop("sandbox", "status");
  assertMatch(r.stdout, /✓ pid namespace\s+pid 1 is coop-init/);
});

Deno.test("usage mistakes exit 2 with a message and no stack trace", async () => {
  for (
    const args of [
      ["sandbox", "exec", "--bogus", "--", "true"],
      ["sandbox", "frobnicate"],
      ["nope"],
      ["sandbox", "exec", "--timeout", "soon", "--", "true"],
      ["sandbox", "exec", "--memory", "lots", "--", "true"],
      ["sandbox", "exec", "--memory", "1k", "--", "true"],
      ["sandbox", "exec", "--pids", "0", "--", "true"],
      ["sandbox", "exec", "--allow-domain", "example.com", "--", "true"],
      ["sandbox", "exec", "--network", "proxy", "--allow-domain", "*.com", "--", "true"],
      ["sandbox", "exec", "--network", "socks", "--", "true"],
      ["sandbox", "exec", "--network", "public", "--allow-domain", "example.com", "--", "true"],
    ]
  ) {
    const r = await coop(...args);
    assertEquals(r.code, 2, args.join(" "));
    assertMatch(r.stderr, /^coop: /);
    assertNotIncludes(r.stderr, "    at ");
  }
});

sandboxTest("coop sandbox exec --network proxy: denials in --json and on stderr", async () => {
  // Denied names are refused before any resolution, so this needs no DNS.
  const script = "curl -sS -o /dev/null -w '%{http_code}\\n' http://evil.example/";
  const json = await coop(
    "sandbox",
    "exec",
    "--network",
    "proxy",
    "--allow-domain",
    "example.com",
    "--allow-domain",
    "*.example.org:8443",
    "--json",
    "--",
    "sh",
    "-c",
    script,
  );
  const result = JSON.parse(json.stdout);
  assertEquals(result.stdout, "403\n");
  assertEquals(result.proxyDenials, [
    { host: "evil.example", port: 80, reason: "is not in the allowlist" },
  ]);
  const streamed = await coop("sandbox", "exec", "--network", "proxy", "--", "sh", "-c", script);
  assertEquals(streamed.stdout, "403\n");
  assertMatch(streamed.stderr, /coop: proxy denied evil\.example:80: is not in the allowlist/);
});

sandboxTest(
  "coop sandbox exec --network public: any name resolves inside, private is refused",
  async () => {
    // No DNS needed: the stub answers every name, and 10.0.0.7 is refused before any dial.
    const script = "getent hosts anything.example; " +
      "curl -sS -o /dev/null -w '%{http_code}\\n' --noproxy '*' http://10.0.0.7/";
    const r = await coop(
      "sandbox",
      "exec",
      "--network",
      "public",
      "--json",
      "--",
      "sh",
      "-c",
      script,
    );
    assertEquals(r.code, 0, r.stderr);
    const result = JSON.parse(r.stdout);
    assertMatch(result.stdout, /^198\.18\.0\.\d+\s+anything\.example\n403\n$/);
    assertEquals(result.proxyDenials.length, 1);
    assertMatch(result.proxyDenials[0].reason, /private \(10\.0\.0\.0\/8\); network "public"/);
  },
);

const PYTHON = (() => {
  try {
    return Deno.statSync("/usr/bin/python3").isFile;
  } catch {
    return false;
  }
})();

sandboxTest(
  {
    name: "coop sandbox exec --network proxy: connections past the cap, in --json and on stderr" +
      (PYTHON ? "" : " — skipped: needs /usr/bin/python3"),
    ignore: !PYTHON,
  },
  async () => {
    // 100 connections held open: the default cap admits 64, the rest get a 503 at once.
    const flood = "import socket, time\n" +
      "s = [socket.create_connection(('127.0.0.1', 3128)) for i in range(100)]\n" +
      "time.sleep(0.5)";
    const args = ["sandbox", "exec", "--network", "proxy"];
    const json = await coop(...args, "--json", "--", "python3", "-c", flood);
    const result = JSON.parse(json.stdout);
    assertEquals(result.exitCode, 0, result.stderr);
    assertEquals(result.proxyRefusedConnections, 36);
    const streamed = await coop(...args, "--", "python3", "-c", flood);
    assertMatch(streamed.stderr, /coop: proxy refused 36 connection\(s\): more were open at once/);
  },
);
