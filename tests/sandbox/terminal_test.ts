// A command on a pseudo-terminal (SpawnOptions.terminal): the pty is its stdio and
// controlling terminal, its size follows resize(), the line discipline's keys reach it.
import process from "node:process";
import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { spawnSandboxed } from "../../src/sandbox/spawn.ts";
import { SandboxPolicyError } from "../../src/sandbox/errors.ts";
import { sandboxTest, until, withWorkspace } from "./harness.ts";
import { onTerminal } from "./terminal_helpers.ts";

sandboxTest("terminal: the pty is the command's stdio and controlling terminal", async () => {
  await withWorkspace(async (workspace) => {
    const run = await onTerminal(workspace, [
      "sh",
      "-c",
      "test -t 0 && test -t 1 && test -t 2 && echo all-ttys; stty size; stty -F /dev/tty size; " +
      "cut -d' ' -f6,7 /proc/self/stat; echo sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$",
    ], { rows: 33, cols: 77 });
    const status = await run.finished();
    assertEquals(status.exitCode, 0, run.output());
    const out = run.output().replaceAll("\r\n", "\n");
    assertMatch(out, /^all-ttys\n33 77\n33 77\n/);
    // tty_nr is non-zero (a controlling terminal), and the shell leads its own session.
    const [session, ttyNr] = out.split("\n")[3].split(" ");
    assert(Number(ttyNr) !== 0, out);
    assertMatch(out, new RegExp(`sid=(\\d+) pid=\\1`));
    assert(Number(session) > 0);
    assertEquals(status.hardening.seccomp, true);
  });
});

sandboxTest("terminal: input is typed through the line discipline and echoed", async () => {
  await withWorkspace(async (workspace) => {
    const run = await onTerminal(workspace, ["sh", "-c", "read line; echo got:$line"]);
    run.type("hello\n");
    const status = await run.finished();
    assertEquals(status.exitCode, 0);
    assertEquals(run.output(), "hello\r\ngot:hello\r\n");
  });
});

sandboxTest("terminal: resize() changes the size and sends SIGWINCH", async () => {
  await withWorkspace(async (workspace) => {
    const run = await onTerminal(workspace, [
      "sh",
      "-c",
      "trap 'echo winch; stty size' WINCH; echo ready; while :; do sleep 0.05; done",
    ]);
    await run.waitFor(/ready/);
    run.child.terminal!.resize(50, 132);
    await run.waitFor(/winch\r\n50 132\r\n/);
    run.child.kill();
    await run.finished();
  });
});

/** Whether a `sleep <seconds>` process runs (seen from the host). */
function sleepRunning(seconds: string): boolean {
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      if (cmdline === `sleep\0${seconds}\0`) return true;
    } catch {
      // exited while we looked
    }
  }
  return false;
}

sandboxTest("terminal: Ctrl-C interrupts the foreground program, Ctrl-D ends input", async () => {
  await withWorkspace(async (workspace) => {
    const run = await onTerminal(workspace, [
      "sh",
      "-c",
      // The trap keeps the shell alive through SIGINT (as an interactive shell would be).
      "trap 'echo caught-int' INT; sleep 100.25; echo after-sleep=$?; cat; echo cat-done",
    ]);
    // Ctrl-C before sleep exists would reach only the shell, whose trap then waits for it.
    assert(await until(() => sleepRunning("100.25"), 10_000), "sleep did not start");
    const started = Date.now();
    run.type("\x03");
    await run.waitFor(/caught-int\r\nafter-sleep=130/);
    assert(Date.now() - started < 5000, "Ctrl-C did not end sleep at once");
    run.type("\x04");
    const status = await run.finished();
    assertMatch(run.output(), /cat-done/);
    assertEquals(status.exitCode, 0);
  });
});

sandboxTest("terminal: Ctrl-Z cannot freeze a program no shell would resume", async () => {
  await withWorkspace(async (workspace) => {
    // The command leads its own session below the init: its process group is orphaned, so the
    // kernel discards the terminal's stop signals instead of stopping it for good.
    const run = await onTerminal(workspace, ["sh", "-c", "sleep 0.5; echo done"]);
    run.type("\x1a");
    const status = await run.finished();
    assertMatch(run.output(), /done\r\n$/);
    assertEquals(status.exitCode, 0);
  });
});

sandboxTest("terminal: the exit status and a killing signal come back", async () => {
  await withWorkspace(async (workspace) => {
    const exited = await onTerminal(workspace, ["sh", "-c", "exit 7"]);
    assertEquals((await exited.finished()).exitCode, 7);
    const killed = await onTerminal(workspace, ["sh", "-c", "echo up; sleep 100"]);
    await killed.waitFor(/up/);
    killed.child.kill("SIGKILL");
    const status = await killed.finished();
    assertEquals(status.signal, "SIGKILL");
  });
});

sandboxTest("terminal: a caller that drops its socket leaves no relay spinning", async () => {
  await withWorkspace(async (workspace) => {
    const silent = await onTerminal(workspace, ["sh", "-c", "echo up; sleep 100"]);
    try {
      await silent.waitFor(/up/);
      // Closed, not half-closed (a client gone): the relay's poll() then always sees POLLHUP.
      silent.child.terminal!.socket.destroy();
      await new Promise((resolve) => setTimeout(resolve, 200));
      const before = process.cpuUsage();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const used = process.cpuUsage(before);
      const ms = (used.user + used.system) / 1000;
      assert(ms < 400, `this process used ${ms} ms of CPU in 1 s with a silent command`);
    } finally {
      silent.child.kill("SIGKILL");
      await silent.child.status;
    }
  });
});

sandboxTest("terminal: a size out of range is refused before anything starts", async () => {
  await withWorkspace(async (workspace) => {
    const error = await assertRejects(
      () => spawnSandboxed({ workspace }, ["true"], { terminal: { rows: 0, cols: 80 } }),
      SandboxPolicyError,
    );
    assertMatch(error.message, /terminal rows must be an integer 1–65535, got 0/);
  });
});

sandboxTest("terminal: a command that cannot be executed reports 127 on the pty", async () => {
  await withWorkspace(async (workspace) => {
    const run = await onTerminal(workspace, ["no-such-program-coop"]);
    const status = await run.finished();
    assertEquals(status.exitCode, 127);
    assertEquals(status.execErrno, 2);
  });
});
