/**
 * `lifetime = "session"` keeps bob's background processes running between tool calls; through
 * the gateway and the real sandbox (root and unprivileged), what they do there is still caught:
 * - a git hook one writes after a call's scan and before the next call started (so its ctime is
 *   older than that call) is disabled at the next call, or when the session sandbox ends when no
 *   call follows — and the owner's real git on the host then does not run it (ATTACKS F27);
 * - the CPU time background processes burn — ones that exit on their own and ones the session's
 *   end kills, by the gateway or by `coop sandbox stop` — is charged to bob by the time the
 *   session ends, so `sandbox_seconds_per_day` refuses his next turn (docs/limits.md).
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../assert.ts";
import { ANTHROPIC as format } from "../agent/wire_formats.ts";
import { type ScriptStep, withScriptedServer } from "../agent/scripted_server.ts";
import { coopToml } from "../e2e/coop_toml.ts";
import { parseConfig } from "../../src/config/config.ts";
import { BudgetExceededError } from "../../src/gateway/budget_gate.ts";
import { Gateway } from "../../src/gateway/gateway.ts";
import { openStateDb } from "../../src/state/state_db.ts";
import { UsageStore } from "../../src/state/usage_store.ts";
import { sandboxTest, until } from "../sandbox/harness.ts";
import { listLiveSandboxes } from "../../src/tools/live_sandbox_files.ts";
import { fileURLToPath } from "node:url";

const MAIN = fileURLToPath(new URL("../../src/cli/main.ts", import.meta.url));

const SESSION = `[users.sandbox]\nlifetime = "session"\nidle_timeout = "10m"\n`;
const bob = { channel: "http", sender: "bob", session: "s1" };
const key = { channel: "http", user: "bob", session: "s1" };
const DAY_MS = 24 * 3600 * 1000;

/** One turn of bob: a bash call, then a text answer. */
function turn(id: string, command: string): ScriptStep[] {
  return [format.toolCall(id, "bash", [JSON.stringify({ command })]), format.text(["ok"])];
}

interface World {
  gateway: Gateway;
  usage: UsageStore;
  /** Bob's workspace on the host. */
  ws: string;
  /** The config file. */
  file: string;
}

async function withGateway(
  bobToml: string,
  script: ScriptStep[],
  fn: (world: World) => Promise<void>,
): Promise<void> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "coop-session-scan-" }));
  await Deno.chmod(dir, 0o755);
  try {
    await withScriptedServer(script, async (server) => {
      const text = coopToml({ kind: "anthropic", baseUrl: server.url, bob: bobToml })
        .replaceAll("{{dir}}", dir);
      const file = join(dir, "coop.toml");
      await Deno.writeTextFile(file, text);
      const config = parseConfig(text, file, dir);
      const db = openStateDb(config.agent.stateDir);
      const gateway = Gateway.open(config, { db, executor: { env: { PATH: "/usr/bin:/bin" } } });
      const ws = join(dir, "workspace", "bob");
      await Deno.mkdir(ws, { recursive: true });
      try {
        await fn({ gateway, usage: new UsageStore(db), ws, file });
      } finally {
        await gateway.drain();
        gateway.close();
      }
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Bob's first call: a repository, and a background job that writes its pre-commit hook once the
 * test creates `go` — after the call and its scan ended. Run by git on the host, the hook leaves
 * `r/pwned`.
 */
const PLANT = "git init -q r && (until [ -e go ]; do sleep 0.05; done; printf " +
  "'#!/bin/sh\\ntouch pwned\\n' > r/.git/hooks/pre-commit; chmod +x r/.git/hooks/pre-commit) " +
  ">/dev/null 2>&1 & echo planted";

/** Lets the job plant, waits until the hook is there and its ctime is well behind the clock. */
async function hookWritten(hook: string): Promise<void> {
  await Deno.writeTextFile(join(hook, "..", "..", "..", "..", "go"), "");
  // Executable too: a hook git would not run yet is one the scan rightly passes over.
  const planted = () => existsSync(hook) && (Deno.statSync(hook).mode! & 0o111) !== 0;
  assert(await until(planted, 15_000), "the background job never wrote the hook");
  const ctime = Deno.statSync(hook).ctime!.getTime();
  const wait = ctime + 1_500 - Date.now();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
}

/** The owner's `git commit` on the host in bob's repository; returns whether the hook ran. */
async function ownerCommitRunsHook(ws: string): Promise<boolean> {
  const out = await new Deno.Command("git", {
    args: [
      ...["-c", "safe.directory=*", "-c", "user.name=o", "-c", "user.email=o@example.org"],
      ...["-C", join(ws, "r"), "commit", "-q", "--allow-empty", "-m", "owner"],
    ],
    env: { PATH: "/usr/bin:/bin", HOME: ws },
    clearEnv: true,
  }).output();
  assertEquals(out.code, 0, new TextDecoder().decode(out.stderr));
  const ran = existsSync(join(ws, "r", "pwned"));
  await Deno.remove(join(ws, "r", "pwned")).catch(() => {});
  return ran;
}

/** The hook is disabled (kept aside), the owner's git does not run it; put back, it does. */
async function assertDisabledButReal(ws: string): Promise<void> {
  const hook = join(ws, "r", ".git", "hooks", "pre-commit");
  assert(!existsSync(hook), "the hook planted between calls is still active");
  assert(existsSync(`${hook}.coop-disabled`), "the original is kept beside it");
  assertEquals(await ownerCommitRunsHook(ws), false, "the owner's git ran bob's hook");
  // Control: the trap was real — put back as bob left it (Coop also took its x bit), the same
  // git runs it.
  await Deno.rename(`${hook}.coop-disabled`, hook);
  await Deno.chmod(hook, 0o755);
  assertEquals(await ownerCommitRunsHook(ws), true, "control: the hook as bob left it runs");
}

sandboxTest(
  "session: a hook a background job plants between calls is disabled at the next call",
  async () => {
    const script = [...turn("c1", PLANT), ...turn("c2", "true")];
    await withGateway(SESSION, script, async ({ gateway, ws }) => {
      const first = await gateway.handle({ ...bob, text: "plant" });
      assertEquals(first.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
      await hookWritten(join(ws, "r", ".git", "hooks", "pre-commit"));
      const second = await gateway.handle({ ...bob, text: "anything" });
      assertEquals(second.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
      await assertDisabledButReal(ws);
    });
  },
);

sandboxTest(
  "session: a hook planted after the last call is disabled when the session ends",
  async () => {
    await withGateway(SESSION, turn("c1", PLANT), async ({ gateway, ws }) => {
      const first = await gateway.handle({ ...bob, text: "plant" });
      assertEquals(first.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
      const hook = join(ws, "r", ".git", "hooks", "pre-commit");
      await hookWritten(hook);
      // /clear ends the session sandbox (as the idle timeout, shutdown, `coop sandbox stop` and
      // a cron run's end do); no call follows.
      gateway.clearSession("http", "bob", "s1");
      assert(await until(() => !existsSync(hook), 15_000), "the session's end did not scan");
      await until(() => gateway.sessionSandboxes.size === 0, 5_000);
      await assertDisabledButReal(ws);
    });
  },
);

/** Python that spins until it has used `seconds` of CPU, touches `marker`, then goes on or ends. */
const burner = (seconds: number, marker: string, forever: boolean) =>
  `python3 -c 'import pathlib, time\nwhile time.process_time() < ${seconds}: pass\n` +
  `pathlib.Path("/work/${marker}").touch()${
    forever ? "\nwhile True: pass" : ""
  }' >/dev/null 2>&1 &`;

sandboxTest(
  "session: CPU burnt in the background is charged to the person when it ends",
  async () => {
    // s1: a job that uses 1 s of CPU and exits (the init reaps it as an orphan) and one that spins
    // on (killed at the end, as /clear, the idle timeout, shutdown or a cron run's end do); s2: a
    // spinner `coop sandbox stop` ends. Bob's budget is 4 s a day: s1 (2 s, and what spun1 burns
    // before the test stops it) must leave room for s2, whose 2 s then spend it.
    const s1 = `${burner(1, "done", false)} ${burner(1, "spun1", true)} echo ok`;
    const s2 = `${burner(2, "spun2", true)} echo ok`;
    const budget = `${SESSION}[users.budget]\nsandbox_seconds_per_day = 4\n`;
    const script = [...turn("c1", s1), ...turn("c2", s2), format.text(["never"])];
    await withGateway(budget, script, async ({ gateway, usage, ws, file }) => {
      const spent = () => usage.totals({ person: "bob" }, DAY_MS).sandboxSeconds;
      const first = await gateway.handle({ ...bob, text: "burn" });
      assertEquals(first.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
      const burnt = (name: string) => until(() => existsSync(join(ws, name)), 60_000);
      assert(await burnt("done") && await burnt("spun1"), "the burners never got their CPU time");
      // Where the session's cgroup counts CPU, some is charged already (every 5 s: the
      // registry's meter); on the rlimit path and v1 without cpuacct, none until the end.
      await gateway.sessionSandboxes.stop(key);
      assert(spent() >= 1.99, `s1's background CPU is charged by its end: ${spent()} s`);

      const second = await gateway.handle({ ...bob, session: "s2", text: "spin" });
      assertEquals(second.tools, [{ name: "bash", sandboxed: true, exitCode: 0 }]);
      assert(await burnt("spun2"), "the spinner never got its CPU time");
      const [live] = listLiveSandboxes(join(ws, "..", "..", "state"));
      const stop = await coop("sandbox", "stop", live.id, "--config", file);
      assertEquals(stop.code, 0, stop.stderr);
      assert(await until(() => spent() >= 3.99, 10_000), `s2's spinner is charged: ${spent()} s`);
      const refused = await assertRejects(
        () => gateway.handle({ ...bob, text: "again" }),
        BudgetExceededError,
      );
      assertEquals((refused.details.budget as { key: string }).key, "sandbox_seconds_per_day");
    });
  },
);

/** The real CLI. */
async function coop(...args: string[]): Promise<{ code: number; stderr: string }> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", MAIN, ...args],
    stdin: "null",
  }).output();
  return { code: out.code, stderr: new TextDecoder().decode(out.stderr) };
}
