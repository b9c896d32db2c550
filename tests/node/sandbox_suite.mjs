// The sandbox library under Node: a representative subset of the sandbox integration suite,
// one test per layer, run with `node --test` against the installed coop-sandbox package (by
// tests/node/node_package_test.ts, as root and as an unprivileged user). Each test names the
// Deno test it mirrors. Plain JavaScript: Node 20 runs no TypeScript.
import assert from "node:assert/strict";
import {
  chmodSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from "node:fs";
import { createServer } from "node:http";
import { createServer as createTcpServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import process from "node:process";
import { test } from "node:test";
import {
  environmentWritesSettled,
  exec,
  probe,
  SandboxQuotaError,
  SandboxUpperInUseError,
  selfTest,
  spawn,
  startSession,
} from "coop-sandbox";

async function inWorkspace(fn) {
  const workspace = mkdtempSync(join(tmpdir(), "coop-node-ws-"));
  try {
    return await fn(workspace);
  } finally {
    rmSync(workspace, { recursive: true, force: true });
  }
}

const sh = (workspace, script, policy = {}, options = {}) =>
  exec({ workspace, ...policy }, ["sh", "-c", script], { timeoutMs: 20_000, ...options });

// tests/sandbox/isolation_test.ts, attacks/uid_test.ts, attacks/process_test.ts
test("namespaces: root inside maps to the invoker or an unprivileged id; pid 1 is the init", () =>
  inWorkspace(async (workspace) => {
    const r = await sh(
      workspace,
      "id -u; cat /proc/1/comm; ls -d /proc/[0-9]* | wc -l; cat /proc/self/uid_map",
    );
    assert.equal(r.exitCode, 0, r.stderr);
    const [uid, init, procs, map] = r.stdout.trim().split("\n");
    assert.equal(uid, "0");
    assert.equal(init, "coop-init");
    assert.ok(Number(procs) <= 4, `the host's processes are visible: ${procs} pids`);
    const outer = Number(map.trim().split(/\s+/)[1]);
    const invoker = process.getuid();
    assert.ok(
      invoker === 0 ? outer !== 0 : outer === invoker,
      `sandbox root is host uid ${outer} (invoker ${invoker})`,
    );
  }));

// attacks/filesystem_test.ts, isolation_test.ts (workspace, read-only /usr, host secrets)
test("mounts: /usr is read-only, the host's home is absent, the workspace is read-write", () =>
  inWorkspace(async (workspace) => {
    const canary = join(process.env.HOME ?? "/root", `.coop-node-canary-${process.pid}`);
    writeFileSync(canary, "secret", { mode: 0o600 });
    try {
      const r = await sh(
        workspace,
        `touch /usr/x 2>/dev/null && echo usr=writable || echo usr=readonly
cat "$1" 2>/dev/null && echo canary=read || echo canary=absent
ls /root /home 2>/dev/null | head -n 1; echo hostdirs=$?
echo hello > /work/out.txt && echo work=ok`.replace("$1", canary),
      );
      assert.match(r.stdout, /usr=readonly/);
      assert.match(r.stdout, /canary=absent/);
      assert.doesNotMatch(r.stdout, /secret/);
      assert.match(r.stdout, /work=ok/);
      assert.equal(readFileSync(join(workspace, "out.txt"), "utf8"), "hello\n");
    } finally {
      rmSync(canary, { force: true });
    }
  }));

// attacks/network_test.ts (Landlock TCP: a connect is refused before it leaves)
test("Landlock and network none: a host listener on 127.0.0.1 is never reached", () =>
  inWorkspace(async (workspace) => {
    let connections = 0;
    const server = createTcpServer((socket) => {
      connections++;
      socket.destroy();
    });
    await new Promise((ready) => server.listen(0, "127.0.0.1", ready));
    try {
      const { port } = server.address();
      const r = await sh(
        workspace,
        `bash -c 'exec 3<>/dev/tcp/127.0.0.1/${port}' 2>&1; echo tcp=$?
tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | paste -sd, -`,
      );
      assert.match(r.stdout, /tcp=1/);
      assert.match(r.stdout, /\nlo\n/);
      assert.ok(r.hardening.landlockAbi >= 1, `Landlock ABI ${r.hardening.landlockAbi}`);
      assert.equal(connections, 0);
    } finally {
      await new Promise((closed) => server.close(closed));
    }
  }));

// attacks/syscall_test.ts (seccomp refuses new namespaces, ptrace, keyrings …)
test("seccomp: unshare of a user namespace is refused; no capabilities; no_new_privs", () =>
  inWorkspace(async (workspace) => {
    const r = await sh(
      workspace,
      "unshare -U true 2>&1; echo unshare=$?; grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status",
    );
    assert.match(r.stdout, /unshare=1/);
    assert.match(r.stdout, /Operation not permitted/);
    assert.match(r.stdout, /CapEff:\s+0000000000000000/);
    assert.match(r.stdout, /NoNewPrivs:\s+1/);
    assert.match(r.stdout, /Seccomp:\s+2/);
    assert.equal(r.hardening.seccomp, true);
  }));

// tests/sandbox/limits_test.ts ("a 1 GiB allocation under a 256 MiB limit is stopped")
test("limits: a 1 GiB allocation under a 256 MiB limit is stopped; pids are capped", () =>
  inWorkspace(async (workspace) => {
    const MiB = 1 << 20;
    const r = await exec({ workspace, memoryBytes: 256 * MiB }, [
      "python3",
      "-c",
      "b = bytearray(1 << 30)",
    ], { timeoutMs: 30_000 });
    assert.equal(r.limits.memory?.bytes, 256 * MiB);
    assert.ok(r.exitCode !== 0, "the allocation succeeded");
    assert.ok(
      r.oomKilled || /MemoryError/.test(r.stderr),
      `neither OOM kill nor MemoryError: ${r.signal} ${r.stderr}`,
    );
    const pids = await sh(
      workspace,
      "i=0; while [ $i -lt 40 ]; do sleep 5 & i=$((i+1)); done 2>/dev/null; jobs -p | wc -l; kill $(jobs -p) 2>/dev/null",
      { pidsLimit: 16 },
    );
    assert.equal(pids.limits.pids?.max, 16);
    assert.ok(Number(pids.stdout.trim()) < 16, `40 forks under pids 16 gave ${pids.stdout}`);
  }));

// tests/sandbox/default_limits_test.ts and probe_limits.ts's resource-limits check: the seeded
// defaults (memory 2 GiB, 512 processes), reported with the path that enforced them
// (ExecResult.limits), and that path is the one the command really ran under.
test("limits: the default limits are reported with the path that applied them, as applied", () =>
  inWorkspace(async (workspace) => {
    const GiB = 2 ** 30;
    const r = await sh(
      workspace,
      "cat /proc/self/limits; echo; cat /proc/self/cgroup",
      { memoryBytes: 2 * GiB, pidsLimit: 512 },
    );
    assert.equal(r.exitCode, 0, r.stderr);
    assert.equal(r.limits.memory?.bytes, 2 * GiB);
    assert.equal(r.limits.pids?.max, 512);
    assert.ok(r.limits.reason.length > 0, "the result says why no better path applied");
    const enforcedBy = {
      "cgroup-v2": ["memory.max", "pids.max"],
      "cgroup-v1": ["memory.limit_in_bytes", "pids.max"],
      "rlimit": ["RLIMIT_AS", "RLIMIT_NPROC"],
    }[r.limits.path];
    assert.ok(enforcedBy, `unknown path ${r.limits.path}`);
    assert.deepEqual([r.limits.memory.enforcedBy, r.limits.pids.enforcedBy], enforcedBy);
    if (r.limits.path === "rlimit") {
      assert.match(r.stdout, new RegExp(`^Max address space\\s+${2 * GiB}\\s`, "m"));
      assert.match(r.stdout, /^Max processes\s+512\s/m);
    } else if (r.limits.path === "cgroup-v1") {
      assert.match(r.stdout, /^\d+:memory:\/coop-/m);
      assert.match(r.stdout, /^\d+:pids:\/coop-/m);
    } else {
      assert.match(r.stdout, /^0::.*\/coop-[^/\n]+$/m);
    }
    // No limit asked: no cgroup for the limits' sake (unless v2 gives every sandbox one).
    const bare = await sh(workspace, "true");
    if (bare.limits.path === "rlimit") {
      assert.equal(bare.limits.reason, "no memory, pids or cpu limit requested");
    } else assert.equal(bare.limits.path, "cgroup-v2");
    assert.equal(bare.limits.memory, undefined);
  }));

// tests/sandbox/attacks/quota_test.ts (the accounting rows: a workspace that already holds files
// keeps the accounting path, as root too)
test("disk quota (accounting): a file stops at the quota; over it, the next command is refused", () =>
  inWorkspace(async (workspace) => {
    const MiB = 1 << 20;
    writeFileSync(join(workspace, ".keep"), "x");
    const quota = { diskQuotaBytes: 8 * MiB };
    const one = await sh(
      workspace,
      "dd if=/dev/zero of=/work/big bs=1M count=16 2>&1; echo rc=$?",
      quota,
    );
    assert.match(one.stdout, /rc=(153|1)\b/, "SIGXFSZ (128+25), or EFBIG when it is ignored");
    assert.equal(one.disk?.enforcement, "accounting");
    assert.ok(one.disk.reason.length > 0, "the result says why no hard quota applies");
    assert.equal(one.disk.quotaBytes, 8 * MiB);
    assert.ok(one.disk.fileSizeBytes <= 8 * MiB, `RLIMIT_FSIZE ${one.disk.fileSizeBytes}`);
    assert.ok(statSync(join(workspace, "big")).size <= 8 * MiB, "the file passed the quota");
    assert.equal(one.disk.exceeded, false);
    // Two files of 6 MiB: each under the per-file bound, together past the quota.
    rmSync(join(workspace, "big"));
    const burst = await sh(
      workspace,
      "for i in 1 2; do dd if=/dev/zero of=/work/f$i bs=1M count=6 2>/dev/null; done; echo done",
      quota,
    );
    assert.equal(burst.disk?.exceeded, true, burst.stderr);
    await assert.rejects(
      () => sh(workspace, "echo RAN > /work/ran", quota),
      (error) =>
        error instanceof SandboxQuotaError && /over its disk quota of 8M/.test(error.message) &&
        /the command did not run/.test(error.message),
    );
    assert.equal(existsSync(join(workspace, "ran")), false);
  }));

// tests/sandbox/proxy_test.ts ("an allowed name and port works"; "a denied name gets the 403")
test("network proxy: an allowed name reaches a loopback server, a denied one gets the 403", () =>
  inWorkspace(async (workspace) => {
    const server = createServer((req, res) =>
      res.end(`host=${req.headers.host} path=${req.url}\n`)
    );
    await new Promise((ready) => server.listen(0, "127.0.0.1", ready));
    try {
      const { port } = server.address();
      const r = await sh(
        workspace,
        `curl -sS http://allowed.test:${port}/plain; echo plain=$?
curl -sS http://denied.test/x; echo denied=$?`,
        { network: "proxy", allowDomains: [`allowed.test:${port}`] },
        {
          proxy: {
            resolve: (name) => Promise.resolve(name === "allowed.test" ? ["127.0.0.1"] : []),
            allowPrivateAddresses: true,
          },
        },
      );
      assert.match(r.stdout, new RegExp(`host=allowed.test:${port} path=/plain\\nplain=0`));
      assert.match(r.stdout, /denied\.test:80 is not in the allowlist/);
    } finally {
      await new Promise((closed) => server.close(closed));
    }
  }));

// tests/sandbox/exec_basics_test.ts (timeout kills the whole sandbox)
test("timeout: the whole sandbox is killed when the time is up", () =>
  inWorkspace(async (workspace) => {
    const started = Date.now();
    const r = await sh(workspace, "sleep 30 & sleep 30", {}, { timeoutMs: 500 });
    assert.equal(r.timedOut, true);
    assert.equal(r.signal, "SIGKILL");
    assert.ok(Date.now() - started < 10_000, "the sandbox outlived its timeout");
  }));

// tests/sandbox/lifecycle_test.ts (spawn: streams in and out)
test("spawn: stdin and stdout are streams; the status settles with the exit code", () =>
  inWorkspace(async (workspace) => {
    const child = await spawn({ workspace }, ["sh", "-c", "read line; echo got:$line; exit 3"], {
      stdin: true,
    });
    let out = "";
    child.stdout.on("data", (chunk) => (out += chunk));
    const closed = new Promise((done) => child.stdout.on("close", done));
    child.stdin.end("ping\n");
    const status = await child.status;
    await closed;
    assert.equal(status.exitCode, 3);
    assert.equal(out, "got:ping\n");
  }));

// tests/sandbox/terminal_test.ts (the terminal option: a pty relayed as a net.Socket)
test("spawn on a terminal: the pty is stdio and controlling terminal; resize; typed input", () =>
  inWorkspace(async (workspace) => {
    // The trap comes after `read`: a trapped signal would interrupt it.
    const script = "stty size; echo ready; read line; echo got:$line; " +
      "trap 'stty size; exit 0' WINCH; echo waiting; while :; do sleep 0.05; done";
    const child = await spawn({ workspace }, ["sh", "-c", script], {
      terminal: { rows: 33, cols: 77 },
      timeoutMs: 20_000,
    });
    let out = "";
    const seen = [];
    const closed = new Promise((done) => child.terminal.socket.on("close", done));
    const waitFor = (text) => new Promise((done) => seen.push([text, done]));
    child.terminal.socket.on("data", (chunk) => {
      out += chunk;
      for (const [text, done] of seen) if (out.includes(text)) done();
    });
    await waitFor("ready");
    child.terminal.socket.write("ping\n");
    await waitFor("waiting");
    child.terminal.resize(40, 100);
    const status = await child.status;
    await closed;
    assert.equal(status.exitCode, 0, out);
    assert.equal(out, "33 77\r\nready\r\nping\r\ngot:ping\r\nwaiting\r\n40 100\r\n");
  }));

// tests/sandbox/self_test_test.ts and the probe checks of `coop sandbox status`
test("probe and self-test: every measured protection holds and no canary is reached", async () => {
  const report = await probe();
  assert.equal(report.available, true, report.error);
  const failed = report.checks.filter((c) => !c.ok).map((c) => `${c.label}: ${c.evidence}`);
  assert.deepEqual(failed, []);
  const result = await selfTest();
  assert.equal(result.error, undefined);
  assert.deepEqual(result.checks.filter((c) => !c.ok), []);
  assert.equal(result.passed, true);
});

// tests/sandbox/session_test.ts: a live session sandbox keeps a background process between
// commands, and nothing of it survives stop().
test("session: a background process outlives its command and dies with the session", () =>
  inWorkspace(async (workspace) => {
    const session = await startSession({ workspace, network: "none" });
    try {
      const bg = await session.exec(["sh", "-c", "sleep 1000 >/dev/null 2>&1 & echo $!"]);
      assert.equal(bg.exitCode, 0, bg.stderr);
      const alive = await session.exec(["kill", "-0", bg.stdout.trim()]);
      assert.equal(alive.exitCode, 0, "the sleep runs between commands");
      const slow = await session.exec(["sleep", "100"], { timeoutMs: 200 });
      assert.deepEqual([slow.timedOut, slow.exitCode], [true, 137]);
    } finally {
      await session.stop();
    }
    assert.equal(session.alive, false);
    assert.equal(existsSync(`/proc/${session.pid}/cmdline`), false, "the init is gone");
  }));

// tests/sandbox/overlay_workdir_test.ts and upper_lock_test.ts: an environment root (an overlay
// over the host's /usr) keeps a write in its upper, synced on the runtime's thread pool (koffi's
// async call under Node); while a live session has the upper mounted, another sandbox on it is
// refused after its wait.
test("environment root: a write kept in the upper; one sandbox at a time on it", () =>
  inWorkspace(async (workspace) => {
    const dir = mkdtempSync(join(tmpdir(), "coop-node-env-"));
    chmodSync(dir, 0o711); // the sandbox's root (another uid when root runs this) passes through
    const rootfs = {
      lower: "host",
      upper: join(dir, "uppers/bob/upper"),
      work: join(dir, "uppers/bob/work"),
    };
    try {
      const write = await sh(workspace, "mkdir -p /usr/local && echo kept > /usr/local/node-note", {
        rootfs,
      });
      assert.equal(write.exitCode, 0, write.stderr);
      const read = await sh(workspace, "cat /usr/local/node-note", { rootfs });
      assert.equal(read.stdout, "kept\n");
      await environmentWritesSettled();
      assert.equal(readFileSync(join(rootfs.upper, "usr/local/node-note"), "utf8"), "kept\n");
      const session = await startSession({ workspace, rootfs });
      try {
        await assert.rejects(
          () => sh(workspace, "true", { rootfs }, { upperWaitMs: 200 }),
          (error) => error instanceof SandboxUpperInUseError && error.holderPid === process.pid,
        );
      } finally {
        await session.stop();
      }
      const after = await sh(workspace, "true", { rootfs }, { upperWaitMs: 2000 });
      assert.equal(after.exitCode, 0, after.stderr);
      await environmentWritesSettled();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }));
