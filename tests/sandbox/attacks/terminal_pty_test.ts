// ATTACKS.md §4.6 on the PTY path (`coop shell`, `coop run` from a terminal): the command's
// stdio is a pseudo-terminal and its controlling terminal. Seccomp still denies TIOCSTI,
// TIOCLINUX and TIOCSETD on it, and the only terminal it reaches is its own.
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { sandboxTest, withWorkspace } from "../harness.ts";
import { onTerminal } from "../terminal_helpers.ts";
import { keyValues, python } from "./attack_table.ts";

const hasTool = (tool: string) => {
  try {
    return Deno.statSync(`/usr/bin/${tool}`).isFile;
  } catch {
    return false;
  }
};
const PYTHON = hasTool("python3"), PERL = hasTool("perl");

sandboxTest({
  name: `§4.6 T1 (pty): TIOCSTI injection into the command's own terminal${
    PERL ? "" : " — skipped: needs perl in /usr/bin"
  }`,
  ignore: !PERL,
}, async () => {
  await withWorkspace(async (workspace) => {
    // If TIOCSTI worked, the injected line would sit first in the terminal's input queue: the
    // shell's `read` would get it instead of the line we type afterwards (and a shell reading
    // commands from the terminal would run it).
    const run = await onTerminal(workspace, [
      "sh",
      "-c",
      `perl -e 'my $c; for (split //, "touch /work/pwned\\n") { $c = $_; ioctl(STDIN, 0x5412, $c) or print "$!\\n" }' | sort | uniq -c
echo injected; read line; echo "read=[$line]"`,
    ]);
    await run.waitFor(/injected/);
    run.type("clean\n");
    const status = await run.finished();
    const out = run.output().replaceAll("\r\n", "\n");
    assertMatch(out, /^\s+18 Operation not permitted$/m);
    assertMatch(out, /^read=\[clean\]$/m);
    assertEquals(status.exitCode, 0, out);
    assert(!(await Deno.stat(`${workspace}/pwned`).catch(() => null)), "injected input ran");
  });
});

sandboxTest({
  name: `§4.6 T2 (pty): TIOCLINUX and TIOCSETD on the command's terminal${
    PYTHON ? "" : " — skipped: needs python3 in /usr/bin"
  }`,
  ignore: !PYTHON,
}, async () => {
  await withWorkspace(async (workspace) => {
    const run = await onTerminal(workspace, [
      "sh",
      "-c",
      python(`
import fcntl
for label, fd in [("stdin", 0), ("dev_tty", os.open("/dev/tty", os.O_RDWR))]:
    attempt("linux_" + label, lambda: fcntl.ioctl(fd, 0x541C, b"\\x0b"))
    attempt("setd_" + label, lambda: fcntl.ioctl(fd, 0x5423, b"\\0\\0\\0\\0"))
    attempt("sti_" + label, lambda: fcntl.ioctl(fd, 0x5412, b"x"))`),
    ]);
    const status = await run.finished();
    const out = keyValues(run.output().replaceAll("\r\n", "\n"));
    assertEquals(status.exitCode, 0, run.output());
    for (const fd of ["stdin", "dev_tty"]) {
      assertEquals(out[`linux_${fd}`], "EPERM", `TIOCLINUX on ${fd}`);
      assertEquals(out[`setd_${fd}`], "EPERM", `TIOCSETD on ${fd}`);
      assertEquals(out[`sti_${fd}`], "EPERM", `TIOCSTI on ${fd}`);
    }
  });
});

sandboxTest(
  "§4.6 T4 (pty): /dev/tty and the hang-up reach only the command's own pty",
  async () => {
    await withWorkspace(async (workspace) => {
      // /dev/tty is the sandbox's pty (its size is the one we set, not any terminal of ours);
      // stty on it changes that pty only; SIGHUP to its process group ends the command alone.
      const run = await onTerminal(workspace, [
        "sh",
        "-c",
        "stty -F /dev/tty size; stty -F /dev/tty cols 5 rows 3; stty size; " +
        "echo sid=$(cut -d' ' -f6 /proc/$$/stat) pid=$$; kill -HUP 0; echo survived-hup",
      ], { rows: 31, cols: 73 });
      const status = await run.finished();
      const out = run.output().replaceAll("\r\n", "\n");
      assertMatch(out, /^31 73\n3 5\n/);
      assertMatch(out, /sid=(\d+) pid=\1\n/, "the command leads a session of its own");
      assert(!out.includes("survived-hup"));
      assertEquals(status.signal, "SIGHUP");
      assertEquals(status.exitCode, 129);
      // This process (the gateway's stand-in) is alive to read the status: the hang-up went to
      // the sandbox's process group only.
    });
  },
);
