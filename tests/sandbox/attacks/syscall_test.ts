// ATTACKS.md §4.4 — syscalls and kernel attack surface (x86_64 numbers through syscallProbe).
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { hostProcessesWith, SANDBOX_TESTS, until } from "../harness.ts";
import { attackSuite, keyValues, python, syscallProbe, X86_64 } from "./attack_table.ts";

const NOT_X86_64 = X86_64 ? undefined : "x86_64 syscall numbers";

/** Asserts that every probe in `calls` answered `expected`. */
function allAnswer(expected: string, calls: Record<string, string>) {
  return (r: { stdout: string }) =>
    assertEquals(
      keyValues(r.stdout),
      Object.fromEntries(Object.keys(calls).map((label) => [label, expected])),
    );
}

const S7_EPERM = {
  "unshare(CLONE_NEWUSER)": "sc(272, 0x10000000)",
  "unshare(CLONE_NEWNS)": "sc(272, 0x20000)",
  "unshare(CLONE_NEWNET)": "sc(272, 0x40000000)",
  "setns(-1, 0)": "sc(308, -1, 0)",
  // SIGCHLD | CLONE_NEW*: were one let through, the fork would print its label twice.
  "clone(CLONE_NEWUSER)": "sc(56, 0x10000000 | 17, 0, 0, 0, 0)",
  "clone(CLONE_NEWNS)": "sc(56, 0x20000 | 17, 0, 0, 0, 0)",
  "clone(CLONE_NEWPID)": "sc(56, 0x20000000 | 17, 0, 0, 0, 0)",
  "clone(CLONE_NEWUSER, high bits set)": "sc(56, 0x7f00000010000011, 0, 0, 0, 0)",
  "mount": "sc(165, 0, 0, 0, 0, 0)",
  "umount2": "sc(166, 0, 0)",
  "pivot_root": "sc(155, 0, 0)",
  "fsopen": "sc(430, 0, 0)",
  "open_tree": "sc(428, -100, 0, 0)",
  "move_mount": "sc(429, 0, 0, 0, 0, 0)",
};

const S8_EPERM = {
  init_module: "sc(175, 0, 0, 0)",
  finit_module: "sc(313, -1, 0, 0)",
  delete_module: "sc(176, 0, 0)",
  kexec_load: "sc(246, 0, 0, 0, 0)",
  kexec_file_load: "sc(320, -1, -1, 0, 0, 0)",
  reboot: "sc(169, 0, 0, 0, 0)",
  swapon: "sc(167, 0, 0)",
  swapoff: "sc(168, 0)",
  acct: "sc(163, 0)",
  quotactl: "sc(179, 0, 0, 0, 0)",
};

attackSuite("§4.4", [
  {
    id: "S4",
    name: "userfaultfd",
    waitsFor: NOT_X86_64,
    argv: syscallProbe({ userfaultfd: "sc(323, 0)" }),
    expect: (r) => assertEquals(keyValues(r.stdout), { userfaultfd: "EPERM" }),
  },
  {
    id: "S5",
    name: "perf_event_open",
    waitsFor: NOT_X86_64,
    argv: syscallProbe({ perf_event_open: "sc(298, 0, 0, -1, -1, 0)" }),
    expect: (r) => assertEquals(keyValues(r.stdout), { perf_event_open: "EPERM" }),
  },
  {
    id: "S6",
    name: "bpf",
    waitsFor: NOT_X86_64,
    argv: syscallProbe({ bpf: "sc(321, 0, 0, 0)" }), // BPF_MAP_CREATE
    expect: (r) => assertEquals(keyValues(r.stdout), { bpf: "EPERM" }),
  },
  {
    id: "S7",
    name: "namespace and mount syscalls",
    waitsFor: NOT_X86_64,
    argv: syscallProbe(S7_EPERM),
    expect: allAnswer("EPERM", S7_EPERM),
  },
  {
    id: "S7-clone3",
    name: "clone3 is ENOSYS so libc falls back to the filtered clone",
    waitsFor: NOT_X86_64,
    argv: syscallProbe({ clone3: "sc(435, 0, 0)" }),
    expect: (r) => assertEquals(keyValues(r.stdout), { clone3: "ENOSYS" }),
  },
  {
    id: "S8",
    name: "modules, kexec, reboot, swap, acct, quotactl",
    waitsFor: NOT_X86_64,
    argv: syscallProbe(S8_EPERM),
    expect: allAnswer("EPERM", S8_EPERM),
  },
  {
    id: "S10",
    name: "seccomp, no_new_privs and Landlock on every thread",
    needs: ["python3"],
    script: python(`
import glob, threading
ready, done = threading.Barrier(9), threading.Event()
answers = []
def worker():
    try:
        socket.create_connection(("127.0.0.1", 80), timeout=1)
        answers.append("OK")
    except OSError as e:
        answers.append(errno.errorcode[e.errno])
    ready.wait()
    done.wait()
threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads: t.start()
ready.wait()
for path in glob.glob("/proc/self/task/*/status") + glob.glob("/proc/1/task/*/status"):
    status = dict(l.split(":\\t", 1) for l in open(path).read().splitlines() if ":\\t" in l)
    print("thread", path.split("/")[2], status["Seccomp"], status["NoNewPrivs"], status["CapEff"])
done.set()
for t in threads: t.join()
print("connect=" + ",".join(sorted(set(answers))) + " x" + str(len(answers)))`),
    expect: (r) => {
      const threads = r.stdout.split("\n").filter((l) => l.startsWith("thread "));
      assertEquals(threads.filter((l) => l.startsWith("thread self ")).length, 9);
      assertEquals(threads.filter((l) => l.startsWith("thread 1 ")).length, 1, "the init");
      for (const line of threads) assertMatch(line, / 2 1 0000000000000000$/, line);
      // Landlock's domain is per thread too: each one's TCP connect is denied.
      assertEquals(keyValues(r.stdout).connect, "EACCES x8");
    },
  },
  {
    id: "S11",
    name: "stacking an own filter (TRACE, USER_NOTIF) cannot loosen the outer one",
    needs: ["python3"],
    waitsFor: NOT_X86_64,
    script: python(`
import ctypes, signal, struct
libc = ctypes.CDLL(None, use_errno=True)
def sc(nr, *args):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    return "OK" if r >= 0 else errno.errorcode[ctypes.get_errno()]
keep = []
def install(action, nr, flags=0):
    # ld seccomp_data.nr; jeq nr ? ret action : ret ALLOW
    insns = [(0x20, 0, 0, 0), (0x15, 0, 1, nr), (0x06, 0, 0, action), (0x06, 0, 0, 0x7fff0000)]
    code = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *i) for i in insns))
    prog = ctypes.create_string_buffer(struct.pack("HxxxxxxQ", len(insns), ctypes.addressof(code)))
    keep.append((code, prog))
    r = libc.syscall(ctypes.c_long(317), ctypes.c_long(1), ctypes.c_long(flags),
                     ctypes.c_void_p(ctypes.addressof(prog)))  # seccomp(SET_MODE_FILTER)
    return "OK" if r >= 0 else errno.errorcode[ctypes.get_errno()]
signal.alarm(5)  # were USER_NOTIF to win, setns would block forever
print("trace_unshare=" + install(0x7ff00000, 272))
print("notif_setns=" + install(0x7fc00000, 308, 1 << 3))  # FLAG_NEW_LISTENER
print("trace_getppid=" + install(0x7ff00000, 110))
print("unshare=" + sc(272, 0x10000000))
print("setns=" + sc(308, -1, 0))
print("getppid=" + sc(110))
print(open("/proc/self/status").read().split("Seccomp_filters:")[1].split()[0] + " filters")`),
    expect: (r) => {
      const out = keyValues(r.stdout);
      // Loading a filter is allowed: it can only tighten.
      assertEquals([out.trace_unshare, out.notif_setns, out.trace_getppid], ["OK", "OK", "OK"]);
      // ERRNO (the outer filter) takes precedence over USER_NOTIF and TRACE.
      assertEquals([out.unshare, out.setns], ["EPERM", "EPERM"]);
      // The own filter is in force where the outer one allows: TRACE without a tracer.
      assertEquals(out.getppid, "ENOSYS");
      assertMatch(r.stdout, /^4 filters$/m);
    },
  },
  {
    id: "S12",
    name: "prctl knobs are harmless and the sandbox still dies at its timeout",
    needs: ["python3"],
    // Python prints its four answers before the timeout, also on a loaded machine.
    timeoutMs: 5000,
    script: python(`
import ctypes, time
libc = ctypes.CDLL(None, use_errno=True)
def prctl(*a):
    r = libc.prctl(*[ctypes.c_ulong(x) for x in a])
    return "OK" if r >= 0 else errno.errorcode[ctypes.get_errno()]
print("dumpable=" + prctl(4, 1, 0, 0, 0))      # PR_SET_DUMPABLE 1
print("pdeathsig=" + prctl(1, 0, 0, 0, 0))     # PR_SET_PDEATHSIG 0
print("set_mm=" + prctl(35, 6, 0x10000, 0, 0)) # PR_SET_MM_START_BRK
print("subreaper=" + prctl(36, 1, 0, 0, 0))    # PR_SET_CHILD_SUBREAPER
sys.stdout.flush()
time.sleep(30)`),
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals([out.dumpable, out.pdeathsig, out.subreaper], ["OK", "OK", "OK"]);
      assertEquals(out.set_mm, "EPERM", "PR_SET_MM needs CAP_SYS_RESOURCE");
      assertEquals(r.timedOut, true);
      assertEquals(r.signal, "SIGKILL");
      assert(r.durationMs < 5000 + 5000, `took ${r.durationMs} ms`);
    },
  },
]);

Deno.test({
  name: "§4.4 S12: the sandbox dies with its supervisor despite PR_SET_PDEATHSIG 0",
  ignore: !SANDBOX_TESTS,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: async () => {
    const tag = `996.${Math.floor(Math.random() * 1e9)}`;
    const root = fileURLToPath(new URL("../../../", import.meta.url));
    const workspace = await Deno.makeTempDir({ prefix: "coop-test-ws-" });
    // A second gateway process runs the sandbox; it is SIGKILLed while the command sleeps.
    const program = `
      import { exec } from "${root}src/sandbox/mod.ts";
      await exec({ workspace: "${workspace}" }, ["python3", "-c",
        "import ctypes, os; ctypes.CDLL(None).prctl(1, 0, 0, 0, 0); os.execvp('sleep', ['sleep', '${tag}'])"]);`;
    const supervisor = new Deno.Command(Deno.execPath(), {
      args: ["eval", program],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    try {
      const started = await until(() => hostProcessesWith(`sleep ${tag}`).length === 1, 15_000);
      try {
        supervisor.kill("SIGKILL");
      } catch {
        // it already exited: it failed to start the sandbox (its stderr says why)
      }
      const { stderr } = await supervisor.output();
      assert(
        started,
        `the supervisor did not start the sandbox: ${new TextDecoder().decode(stderr)}`,
      );
      assert(
        await until(() => hostProcessesWith(`sleep ${tag}`).length === 0, 2000),
        "the sandboxed command outlived its supervisor",
      );
    } finally {
      await Deno.remove(workspace, { recursive: true }).catch(() => {});
    }
  },
});
