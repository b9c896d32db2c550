// ATTACKS.md §4.6 — terminal. The command's stdio are pipes and it has no controlling terminal;
// seccomp denies the dangerous ioctls on any fd, including a pty the command opens itself.
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { attackSuite, keyValues, python } from "./attack_table.ts";
import { sanitizeForTerminal } from "../../../src/channels/terminal_channel.ts";

/** Tries `request` on stdin and on both ends of a fresh pty. */
function ioctlProbe(label: string, request: string, arg: string): string {
  return `
import fcntl, pty
master, slave = pty.openpty()
for fd_label, fd in [("stdin", 0), ("pty", slave), ("ptm", master)]:
    attempt("${label}_" + fd_label, lambda: fcntl.ioctl(fd, ${request}, ${arg}))`;
}

attackSuite("§4.6", [
  {
    id: "T1",
    name: "TIOCSTI injection",
    needs: ["perl", "python3"],
    script:
      `perl -e 'for (split //, "touch /work/pwned\\n") { ioctl(STDIN, 0x5412, $_) or print "$!\\n" }' | sort | uniq -c
${
        python(`
${ioctlProbe("sti", "0x5412", 'b"x"')}
${ioctlProbe("sti_high_bits", "0x100005412", 'b"x"')}`)
      }`,
    expect: async (r, workspace) => {
      // One refusal per character; seccomp answers before any tty check.
      assertMatch(r.stdout, /^\s+18 Operation not permitted$/m);
      const out = keyValues(r.stdout);
      for (const fd of ["stdin", "pty", "ptm"]) {
        assertEquals(out[`sti_${fd}`], "EPERM", fd);
        assertEquals(out[`sti_high_bits_${fd}`], "EPERM", `${fd}, request with high bits set`);
      }
      assert(!(await Deno.stat(`${workspace}/pwned`).catch(() => null)), "injected input ran");
    },
  },
  {
    id: "T2",
    name: "TIOCLINUX and TIOCSETD",
    needs: ["python3"],
    script: python(`
${ioctlProbe("linux", "0x541C", 'b"\\x0b"')}
${ioctlProbe("setd", "0x5423", 'b"\\0\\0\\0\\0"')}`),
    expect: (r) => {
      const out = keyValues(r.stdout);
      for (const fd of ["stdin", "pty", "ptm"]) {
        assertEquals(out[`linux_${fd}`], "EPERM", `TIOCLINUX on ${fd}`);
        assertEquals(out[`setd_${fd}`], "EPERM", `TIOCSETD on ${fd}`);
      }
    },
  },
  {
    id: "T3",
    name: "escape sequences into the operator's UI",
    // The sandbox passes bytes through untouched; the terminal channel must neutralise them.
    script:
      "printf '\\033]52;c;ZXZpbA==\\007\\033]8;;http://evil\\007click\\033]8;;\\007 \\033[2J\\302\\233H done'",
    expect: (r) => {
      assert(r.stdout.includes("\x1b]52;c;"), "the command really emitted OSC 52");
      const shown = sanitizeForTerminal(r.stdout);
      assertEquals(shown, "click H done");
    },
  },
  {
    id: "T4",
    name: "controlling-tty signals and stty",
    needs: ["stty", "python3"],
    script: `stty -F /dev/tty; echo stty_tty=$?; stty; echo stty_stdin=$?
readlink /proc/$$/fd/0 /proc/$$/fd/1 /proc/$$/fd/2
cut -d' ' -f7 /proc/self/stat
${python(`attempt("open_dev_tty", lambda: os.open("/dev/tty", os.O_RDWR))`)}
kill -HUP 0; echo survived-hup`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals([out.stty_tty, out.stty_stdin], ["1", "1"]);
      assertMatch(r.stderr, /stty: \/dev\/tty: No such device or address/);
      assertEquals(out.open_dev_tty, "ENXIO", "no controlling terminal");
      const lines = r.stdout.split("\n");
      for (const line of lines.slice(2, 5)) assertMatch(line, /^pipe:\[\d+\]$/);
      assertEquals(lines[5], "0", "tty_nr of the command");
      // SIGHUP to its own process group reaches only the sandbox: the shell dies, we don't.
      assertEquals(r.signal, "SIGHUP");
      assertEquals(r.exitCode, 129);
      assert(!r.stdout.includes("survived-hup"));
    },
  },
]);
