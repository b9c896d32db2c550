import { assertEquals, assertThrows } from "../assert.ts";
import { ERRNO, errnoName, errnoText } from "../../src/sandbox/errno.ts";
import { decodeWaitStatus, signalName, signalNumber } from "../../src/sandbox/wait_status.ts";

Deno.test("errno names and numbers come from the runtime's tables (Linux numbers)", () => {
  // [number, name, description] — the setup steps and the proxy report these.
  const table: Array<[number, string, string]> = [
    [1, "EPERM", "operation not permitted"],
    [2, "ENOENT", "no such file or directory"],
    [11, "EAGAIN", "resource temporarily unavailable"],
    [13, "EACCES", "permission denied"],
    [22, "EINVAL", "invalid argument"],
    [28, "ENOSPC", "no space left on device"],
    [40, "ELOOP", "too many symbolic links encountered"],
    [101, "ENETUNREACH", "network is unreachable"],
    [111, "ECONNREFUSED", "connection refused"],
    [113, "EHOSTUNREACH", "host is unreachable"],
    [125, "ECANCELED", "operation canceled"],
  ];
  for (const [errno, name, text] of table) {
    assertEquals([ERRNO[name], errnoName(errno), errnoText(errno)], [errno, name, text], name);
  }
  // libuv has no message for ENOEXEC; os.constants still names it.
  assertEquals([ERRNO.ENOEXEC, errnoName(8), errnoText(8)], [8, "ENOEXEC", "errno 8"]);
  assertEquals([errnoName(250), errnoText(250)], ["errno 250", "errno 250"]);
  assertEquals(ERRNO.EOPNOTSUPP, 95);
});

Deno.test("signal names and numbers come from os.constants.signals", () => {
  const table: Array<[number, string]> = [
    [1, "SIGHUP"],
    [6, "SIGABRT"],
    [9, "SIGKILL"],
    [10, "SIGUSR1"],
    [12, "SIGUSR2"],
    [15, "SIGTERM"],
    [17, "SIGCHLD"],
    [19, "SIGSTOP"],
    [29, "SIGIO"],
    [31, "SIGSYS"],
  ];
  for (const [signo, name] of table) {
    assertEquals([signalName(signo), signalNumber(name)], [name, signo], name);
  }
  assertEquals(signalName(34), "SIG34"); // a real-time signal has no name
  assertEquals(signalNumber("SIGIOT"), 6); // an alias still has its number
  assertThrows(() => signalNumber("SIGNOPE"), RangeError);
  assertThrows(() => signalNumber("toString"), RangeError);
});

Deno.test("wait statuses decode like a shell reports them, SIGUSR1 included", () => {
  assertEquals(decodeWaitStatus(7 << 8), { exitCode: 7, signal: null });
  assertEquals(decodeWaitStatus(9), { exitCode: 137, signal: "SIGKILL" });
  assertEquals(decodeWaitStatus(10), { exitCode: 138, signal: "SIGUSR1" });
  assertEquals(decodeWaitStatus(15 | 0x80), { exitCode: 143, signal: "SIGTERM" }); // core dumped
});
