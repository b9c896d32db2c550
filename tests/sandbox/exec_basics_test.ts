import { assert, assertEquals, assertMatch, assertRejects } from "../assert.ts";
import { exec, SandboxSetupError, spawnSandboxed } from "../../src/sandbox/mod.ts";
import { sandboxTest, sh, withWorkspace } from "./harness.ts";

sandboxTest("echo hello prints hello and exits 0", async () => {
  const r = await withWorkspace((workspace) => exec({ workspace }, ["echo", "hello"]));
  assertEquals(r.stdout, "hello\n");
  assertEquals(r.exitCode, 0);
  assertEquals(r.signal, null);
  assertEquals(r.timedOut, false);
});

sandboxTest("exit 7 returns 7", async () => {
  const r = await sh("exit 7");
  assertEquals(r.exitCode, 7);
  assertEquals(r.signal, null);
});

sandboxTest("kill -9 $$ is reported as killed by SIGKILL (137)", async () => {
  const r = await sh("kill -9 $$");
  assertEquals(r.signal, "SIGKILL");
  assertEquals(r.exitCode, 137);
});

sandboxTest("a missing command exits 127 with a clear message", async () => {
  const r = await withWorkspace((workspace) => exec({ workspace }, ["no-such-command-xyz"]));
  assertEquals(r.exitCode, 127);
  assertMatch(r.stderr, /no-such-command-xyz: command not found \(ENOENT\)/);
});

sandboxTest("a script without #! (ENOEXEC) and one killed by SIGUSR1 say so", async () => {
  const r = await withWorkspace(async (workspace) => {
    await Deno.writeTextFile(`${workspace}/script`, "echo hi\n", { mode: 0o755 });
    return exec({ workspace }, ["/work/script"]);
  });
  assertEquals(r.exitCode, 126);
  assertMatch(r.stderr, /\/work\/script: not a program this system runs .*\(ENOEXEC\)/);
  const usr1 = await sh("kill -USR1 $$");
  assertEquals([usr1.exitCode, usr1.signal], [138, "SIGUSR1"]);
});

sandboxTest("stdin is delivered and closed", async () => {
  const r = await withWorkspace((workspace) =>
    exec({ workspace }, ["sh", "-c", "tr a-z A-Z"], { stdin: "quiet input\n" })
  );
  assertEquals(r.stdout, "QUIET INPUT\n");
});

sandboxTest("a nonexistent workspace fails at the mount-workspace step", async () => {
  const error = await assertRejects(
    () => exec({ workspace: "/nonexistent/coop-workspace" }, ["true"]),
    SandboxSetupError,
  );
  assertEquals(error.step, "mount-workspace");
  assertEquals(error.errno, 2);
  assertMatch(error.message, /mount-workspace.*ENOENT/);
});

for (
  const step of [
    "mount-private",
    "pivot-root",
    "bind-readonly",
    "mount-tmp",
    "mount-dev",
    "mount-proc",
    "mask-proc",
    "umount-oldroot",
    "hostname",
    "drop-capabilities",
    "fork",
    "ipc-limits",
  ] as const
) {
  sandboxTest(`a failure forced at ${step} is reported naming that step`, async () => {
    const error = await assertRejects(
      () => withWorkspace((workspace) => exec({ workspace }, ["true"], { failAt: step })),
      SandboxSetupError,
    );
    assertEquals(error.step, step);
    assert(error.message.includes(`"${step}"`), error.message);
  });
}

sandboxTest(
  "the init forwards the gateway's SIGTERM to the command, which may handle it",
  async () => {
    await withWorkspace(async (workspace) => {
      const child = await spawnSandboxed({ workspace }, [
        "sh",
        "-c",
        "trap 'echo got-term; exit 3' TERM; echo ready; while :; do sleep 0.05; done",
      ]);
      let out = "";
      const ready = new Promise<void>((done) =>
        child.stdout.on("data", (chunk: Uint8Array) => {
          out += new TextDecoder().decode(chunk);
          if (out.includes("ready")) done();
        })
      );
      // The init may be reaped before the last output is read: wait for the pipe's end too.
      const closed = new Promise((done) => child.stdout.on("close", done));
      await ready;
      child.kill("SIGTERM");
      const status = await child.status;
      await closed;
      assertEquals(status.exitCode, 3);
      assertMatch(out, /got-term/);
    });
  },
);

sandboxTest("an unhandled forwarded SIGTERM is reported as the command's signal", async () => {
  await withWorkspace(async (workspace) => {
    const child = await spawnSandboxed({ workspace }, ["sleep", "30"]);
    await new Promise((done) => setTimeout(done, 100));
    child.kill("SIGTERM");
    const status = await child.status;
    assertEquals([status.exitCode, status.signal], [143, "SIGTERM"]);
  });
});
