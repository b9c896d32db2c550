import { assert, assertEquals, assertMatch, assertNotIncludes } from "../assert.ts";
import { exec } from "../../src/sandbox/mod.ts";
import { sandboxTest, sh, withWorkspace } from "./harness.ts";

sandboxTest("host secrets, homes and Coop's state are absent inside", async () => {
  // A canary "state directory" outside the workspace, as Coop's config and database would be.
  // The canaries are random, and the directory's name holds neither: an error message that
  // names the path (cat's "No such file") must not look like a leaked file's content.
  const tag = crypto.randomUUID();
  const canaryConfig = `canary-config-${tag}`, canaryDb = `canary-db-${tag}`;
  const state = await Deno.makeTempDir({ prefix: "coop-state-" });
  await Deno.writeTextFile(`${state}/coop.toml`, `secret = '${canaryConfig}'\n`);
  await Deno.writeTextFile(`${state}/sessions.db`, canaryDb);
  const home = Deno.env.get("HOME") ?? "/root";
  try {
    const r = await sh(
      `for p in /etc/shadow /root "$1" "$2" "$2/coop.toml"; do [ -e "$p" ] && echo "VISIBLE $p"; done
       find / -xdev \\( -name 'coop*.toml' -o -name '*.db' \\) 2>/dev/null
       cat /etc/shadow "$2/coop.toml" 2>&1; echo done`.replaceAll('"$1"', `"${home}"`)
        .replaceAll('"$2', `"${state}`),
    );
    assertNotIncludes(r.stdout, "VISIBLE");
    assertNotIncludes(r.stdout, canaryConfig);
    assertNotIncludes(r.stdout, canaryDb);
    assertNotIncludes(r.stdout, "coop.toml\n"); // find printed nothing
    assertMatch(r.stdout, /No such file or directory/);
    assertMatch(r.stdout, /done\n$/);
  } finally {
    await Deno.remove(state, { recursive: true });
  }
});

sandboxTest("/usr and /etc are read-only", async () => {
  const r = await sh(
    "touch /usr/x; echo usr=$?; touch /etc/x; echo etc=$?; touch /x; echo root=$?",
  );
  assertMatch(r.stdout, /usr=1/);
  assertMatch(r.stdout, /etc=1/);
  assertMatch(r.stdout, /root=1/);
  assertMatch(r.stderr, /Read-only file system/);
});

sandboxTest("a file written to /work appears on the host, owned by the invoking user", async () => {
  await withWorkspace(async (workspace) => {
    const r = await exec({ workspace }, ["sh", "-c", "echo from-inside > /work/new.txt"]);
    assertEquals(r.exitCode, 0);
    const info = await Deno.stat(`${workspace}/new.txt`);
    assertEquals(await Deno.readTextFile(`${workspace}/new.txt`), "from-inside\n");
    assertEquals(info.uid, Deno.uid());
    assertEquals(info.gid, Deno.gid());
  });
});

sandboxTest("a script written to the workspace, made executable, runs", async () => {
  const r = await sh(
    "printf '#!/bin/sh\\necho script-ran\\n' > /work/s.sh && chmod +x /work/s.sh && /work/s.sh && cd /work && ./s.sh",
  );
  assertEquals(r.stdout, "script-ran\nscript-ran\n");
  assertEquals(r.exitCode, 0);
});

sandboxTest("workspace is cwd and $HOME", async () => {
  const r = await sh('pwd; echo "$HOME"');
  assertEquals(r.stdout, "/work\n/work\n");
});

sandboxTest("ps shows only the sandbox's processes, pid 1 being the init", async () => {
  const r = await sh("ps -eo pid,comm --no-headers");
  const rows = r.stdout.trim().split("\n").map((line) => line.trim().split(/\s+/));
  assertEquals(rows[0], ["1", "coop-init"]);
  // init, sh, ps — nothing of the host's hundreds of processes.
  assert(rows.length <= 3, r.stdout);
  for (const [, comm] of rows) assert(["coop-init", "sh", "ps"].includes(comm), r.stdout);
});

sandboxTest("no network: only lo, no route to a host listener, no DNS", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  let accepted = false;
  const accepting = listener.accept().then((conn) => {
    accepted = true;
    conn.close();
  }).catch(() => {});
  try {
    const r = await sh(
      `tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '
       bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port}' 2>/dev/null && echo CONNECTED
       getent hosts example.com || echo dns-failed`,
    );
    assertEquals(r.stdout.split("\n")[0], "lo");
    assertNotIncludes(r.stdout, "CONNECTED");
    assertMatch(r.stdout, /dns-failed/);
    await new Promise((done) => setTimeout(done, 100));
    assertEquals(accepted, false);
  } finally {
    listener.close();
    await accepting;
  }
});

sandboxTest("a secret in the gateway's environment is invisible inside", async () => {
  const secret = `s3cr3t-${crypto.randomUUID()}`;
  Deno.env.set("COOP_TEST_API_KEY", secret);
  try {
    const r = await sh("env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'");
    assertNotIncludes(r.stdout, secret);
    assertNotIncludes(r.stdout, "COOP_TEST_API_KEY");
    assertMatch(r.stdout, /^PATH=/m);
  } finally {
    Deno.env.delete("COOP_TEST_API_KEY");
  }
});

sandboxTest("only fds 0, 1, 2 inside while the gateway holds files and sockets", async () => {
  const file = await Deno.open("/proc/self/status");
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    // A fresh process shows what is inherited (the shell itself may hold fds while redirecting).
    // Look only once it sleeps: from exec until then, ld.so and setlocale open fd 3 briefly.
    const r = await sh(
      'sleep 5 & p=$!; until read -r _ c s _ < /proc/$p/stat && [ "$c $s" = "(sleep) S" ]; do :; done; ls /proc/$p/fd; kill $p',
    );
    assertEquals(r.stdout, "0\n1\n2\n");
  } finally {
    file.close();
    listener.close();
  }
});

sandboxTest("hostname is the sandbox's own", async () => {
  const r = await sh("cat /proc/sys/kernel/hostname; cat /etc/hostname");
  assertEquals(r.stdout, "coop\ncoop\n");
});

sandboxTest("no capabilities and no_new_privs inside", async () => {
  const r = await sh(
    "grep -E '^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status",
  );
  for (const line of r.stdout.trim().split("\n")) {
    if (line.startsWith("NoNewPrivs")) assertMatch(line, /NoNewPrivs:\s+1$/);
    else assertMatch(line, /:\s+0000000000000000$/);
  }
  assertEquals(r.stdout.trim().split("\n").length, 6);
});
