// Issue 14, item 3, through the real sandbox: a non-owner whose settings name an environment
// runs on an overlay root — the built base below, their own upper above — with persist binds,
// [env] and COOP_SESSION; what they install stays theirs across calls and sessions, another
// user on the same environment does not see it, the host's /usr is untouched, and
// `resetUser` removes it. An unbuilt base refuses the call (fail closed).
import { ok, strictEqual } from "node:assert/strict";
import fs from "node:fs";
import { join } from "node:path";
import { parseConfig } from "../../src/config/config.ts";
import { environmentPaths } from "../../src/environments/environment_layout.ts";
import { resetUser } from "../../src/environments/environment_lifecycle.ts";
import { environmentWritesSettled } from "../../src/sandbox/mod.ts";
import { upperLocker } from "../../src/environments/layer_removal.ts";
import { type ToolCall, ToolExecutor } from "../../src/tools/tool_executor.ts";
import { sandboxPolicyForUser } from "../../src/tools/sandbox_placement.ts";
import { buildTestBase, writeBuiltManifest } from "../environments/environment_fixture.ts";
import { endEnvironmentSession } from "../../src/gateway/environment_sessions.ts";
import { loadTrampoline } from "../../src/sandbox/ffi.ts";
import { DEFAULT_UPPER_WAIT_MS, tryLockUpper } from "../../src/sandbox/upper_lock.ts";
import { until } from "../sandbox/harness.ts";
import { SessionSandboxes } from "../../src/tools/session_sandboxes.ts";

const ignore = Deno.env.get("COOP_SANDBOX_TEST") !== "1";

function bash(user: string, command: string, session?: string): ToolCall {
  return {
    principal: { name: user, trust: user === "alice" ? "owner" : "inner" },
    situation: { channel: "http", ceiling: null, contributors: [] },
    tool: "bash",
    args: { command },
    ...(session ? { session: { channel: "http", user, session } } : {}),
  };
}

const COOPFILE = `
[base]
image = "debian:bookworm"
[session]
persist = ["/root/.cache"]
[env]
GREETING = "hello from the Coopfile"
`;

async function setUp(): Promise<{ base: string; file: string; text: string }> {
  const base = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-envexec-" }));
  // The sandbox's root (a dedicated uid when root runs the tests) must reach what it mounts.
  await Deno.chmod(base, 0o755);
  const file = join(base, "coop.toml");
  const text = '[agent]\nworkspace = "ws"\nstate_dir = "state"\n' +
    '[sandbox]\nenvironment = "Coopfile"\n' +
    '[[users]]\nname = "alice"\ntrust = "owner"\n[[users]]\nname = "bob"\ntrust = "inner"\n' +
    '[[users]]\nname = "carol"\ntrust = "inner"\n';
  await Deno.writeTextFile(file, text);
  await Deno.writeTextFile(join(base, "Coopfile"), COOPFILE);
  return { base, file, text };
}

Deno.test({
  name: "environment: bob's install persists for bob only, never on the host; reset removes it",
  ignore,
  async fn() {
    const { base, file, text } = await setUp();
    const marker = `coop-env-${crypto.randomUUID().slice(0, 8)}`;
    try {
      const config = parseConfig(text, file, base);
      const executor = new ToolExecutor(config);
      // Not built: the call is refused, naming the Coopfile and `coop init`.
      const refused = await executor.call(bash("bob", "echo ran"));
      ok(refused.isError, refused.content);
      ok(refused.content.includes(join(base, "Coopfile")), refused.content);
      ok(refused.content.includes(`coop init --config ${file}`), refused.content);
      ok(!refused.content.includes("ran\n"), refused.content);

      buildTestBase(config.agent.stateDir, join(base, "Coopfile"), ["chmod", "env"]);
      const install = await executor.call(bash(
        "bob",
        `mkdir -p /usr/local/bin && printf '#!/bin/sh\\necho ${marker} works\\n' > ` +
          `/usr/local/bin/${marker} && chmod 755 /usr/local/bin/${marker} && ` +
          `echo cached > /root/.cache/c && cat /etc/os-release && ` +
          `echo "$GREETING|$COOP_SESSION|$COOP_WORKSPACE"`,
        "s1",
      ));
      strictEqual(install.isError, false, install.content);
      ok(
        install.content.includes("coop-mini") || install.content.includes("NAME="),
        install.content,
      );
      ok(install.content.includes("hello from the Coopfile|s1|/work"), install.content);

      // A later call in another session: still there for bob.
      const later = await executor.call(bash("bob", `${marker}; cat /root/.cache/c`, "s2"));
      strictEqual(later.content, `${marker} works\ncached\n[exit code 0]`);
      // Carol, same environment: neither the program nor the cache.
      const carol = await executor.call(
        bash("carol", `ls /usr/local/bin/${marker} 2>&1; ls /root/.cache 2>&1; echo end`),
      );
      ok(!carol.content.includes(`${marker} works`), carol.content);
      ok(carol.content.includes("No such file"), carol.content);
      ok(!carol.content.includes("\nc\n"), carol.content);
      // The host's /usr never saw it.
      ok(!fs.existsSync(`/usr/local/bin/${marker}`));
      ok(
        !fs.existsSync(
          join(
            environmentPaths(config.agent.stateDir, join(base, "Coopfile")).rootfs,
            "usr/local/bin",
            marker,
          ),
        ),
      );
      // The owner's commands stay on the host: no environment.
      const owner = await executor.call(bash("alice", 'echo "[$COOP_SESSION][$GREETING]"'));
      strictEqual(owner.decision?.placement, "host");
      ok(owner.content.startsWith("[][]"), owner.content);
      // The one policy builder says the same.
      const policy = sandboxPolicyForUser(config, {
        user: "bob",
        settings: executor.settingsFor(config.users[1]),
        workspace: join(base, "ws", "bob"),
      });
      ok(policy.rootfs && "upper" in policy.rootfs && policy.rootfs.upper.includes("/uppers/bob/"));

      // reset: bob's program is gone; his persist directory stays without --persist.
      const removed = resetUser(config.agent.stateDir, "bob", false, await upperLocker());
      ok(removed.length === 1 && removed[0].bytes > 0, JSON.stringify(removed));
      const after = await executor.call(bash("bob", `${marker} 2>&1; cat /root/.cache/c`));
      ok(!after.content.includes(`${marker} works`), after.content);
      ok(after.content.includes("cached"), after.content);
    } finally {
      await environmentWritesSettled(); // the pool's refill must not race the removals
      // What the sandbox's root owns: removed without following anything it made.
      resetUser(join(base, "state"), "bob", true, await upperLocker());
      resetUser(join(base, "state"), "carol", true, await upperLocker());
      await Deno.remove(base, { recursive: true });
    }
  },
});

Deno.test({
  name: 'environment: upper = "session" keeps a write for that session only; its end removes it',
  ignore,
  async fn() {
    const { base, file, text } = await setUp();
    await Deno.writeTextFile(
      join(base, "Coopfile"),
      '[base]\nimage = "host"\n[session]\nupper = "session"\n',
    );
    try {
      const config = parseConfig(text, file, base);
      writeBuiltManifest(config.agent.stateDir, join(base, "Coopfile"));
      const executor = new ToolExecutor(config);
      const write = await executor.call(
        bash("bob", "echo mine > /usr/local/note && cat /usr/local/note", "s1"),
      );
      strictEqual(write.content, "mine\n[exit code 0]", write.content);
      const same = await executor.call(bash("bob", "cat /usr/local/note", "s1"));
      strictEqual(same.content, "mine\n[exit code 0]");
      const other = await executor.call(bash("bob", "cat /usr/local/note 2>&1; echo", "s2"));
      ok(other.content.includes("No such file"), other.content);
      // The gateway's /clear of s1: its layer is gone, a new command in s1 starts clean.
      await endEnvironmentSession(config, "bob", { channel: "http", id: "s1" });
      const cleared = await executor.call(bash("bob", "cat /usr/local/note 2>&1; echo", "s1"));
      ok(cleared.content.includes("No such file"), cleared.content);
      ok(
        !fs.existsSync("/usr/local/note") ||
          fs.readFileSync("/usr/local/note", "utf8") !== "mine\n",
      );
    } finally {
      await environmentWritesSettled(); // the pool's refill must not race the removals
      resetUser(join(base, "state"), "bob", true, await upperLocker());
      await Deno.remove(base, { recursive: true });
    }
  },
});

/**
 * Bob's command is cancelled while another sandbox of his holds his upper's lock: it ends at
 * once, reported as not run, and leaves no waiter behind. `live`: his sandboxes live for the
 * session (the wait is then the session sandbox's start, which other calls share).
 */
async function cancelWhileUpperHeld(live: boolean): Promise<void> {
  const { base, file, text } = await setUp();
  await Deno.writeTextFile(join(base, "Coopfile"), '[base]\nimage = "host"\n');
  const lifetime = live ? 'lifetime = "session"\n' : "";
  const sessions = live ? new SessionSandboxes(join(base, "state")) : undefined;
  try {
    const config = parseConfig(
      text.replace('environment = "Coopfile"\n', `environment = "Coopfile"\n${lifetime}`),
      file,
      base,
    );
    writeBuiltManifest(config.agent.stateDir, join(base, "Coopfile"));
    const executor = new ToolExecutor(config, { sessionSandboxes: sessions });
    const session = live ? "s1" : undefined;
    // Bob's policy as every call of his gets it; building it makes the directory of his upper.
    const policy = sandboxPolicyForUser(config, {
      user: "bob",
      settings: executor.settingsFor(config.users[1]),
      workspace: join(base, "ws", "bob"),
    });
    const upper = policy.rootfs && "upper" in policy.rootfs ? policy.rootfs.upper : "";
    // Another sandbox of bob's has it (`coop run` in another process, say): its lock taken
    // directly, before the upper exists — the library makes it right before it waits.
    const held = tryLockUpper(await loadTrampoline(), upper);
    ok(held, "bob's upper was free");
    const cancel = new AbortController();
    try {
      const call = executor.call({
        ...bash("bob", "touch /work/ran", session),
        signal: cancel.signal,
      });
      ok(await until(() => fs.existsSync(upper), 30_000), "the command reached the lock");
      const aborted = performance.now();
      cancel.abort(new Error("the turn was stopped"));
      const outcome = await call;
      const tookMs = performance.now() - aborted;
      strictEqual(outcome.isError, true);
      ok(outcome.content.includes("cancelled before it started"), outcome.content);
      ok(
        tookMs < DEFAULT_UPPER_WAIT_MS / 2,
        `ended ${Math.round(tookMs)} ms after the cancel, not at once`,
      );
    } finally {
      held.release();
    }
    // A waiter left behind would take the lock now that it is free, and run.
    const after = await executor.call(
      bash("bob", "test -e /work/ran && echo ran || echo no", session),
    );
    strictEqual(after.content, "no\n[exit code 0]");
    ok(!fs.existsSync(join(base, "ws", "bob", "ran")), "the cancelled command never ran");
  } finally {
    await sessions?.stopAll();
    await environmentWritesSettled(); // the pool's refill must not race the removals
    resetUser(join(base, "state"), "bob", true, await upperLocker());
    await Deno.remove(base, { recursive: true });
  }
}

Deno.test({
  name:
    "environment: a command cancelled while another sandbox has bob's upper ends at once, unrun",
  ignore,
  fn: () => cancelWhileUpperHeld(false),
});

Deno.test({
  name: "environment: the same for a live session's command, cancelled while its sandbox starts",
  ignore,
  fn: () => cancelWhileUpperHeld(true),
});
