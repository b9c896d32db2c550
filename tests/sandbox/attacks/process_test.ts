// ATTACKS.md §4.3 — processes, IPC and privileges.
import { assert, assertEquals, assertMatch, assertNotIncludes } from "../../assert.ts";
import { exec, SandboxSetupError } from "../../../src/sandbox/mod.ts";
import { hostProcessesWith, SANDBOX_TESTS, withWorkspace } from "../harness.ts";
import {
  type Attack,
  attackSuite,
  keyValues,
  python,
  syscallProbe,
  X86_64,
} from "./attack_table.ts";

const HOST_PYTHON = "/usr/bin/python3";
const NOT_X86_64 = X86_64 ? undefined : "x86_64 syscall numbers";

/** A unique `sleep` argument that finds a row's processes on the host. */
function marker(): string {
  return `997.${Math.floor(Math.random() * 1e9)}`;
}

function alive(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

/** Runs python3 on the host and returns its stdout. */
async function hostPython(program: string): Promise<string> {
  const out = await new Deno.Command(HOST_PYTHON, { args: ["-c", program] }).output();
  if (!out.success) throw new Error(new TextDecoder().decode(out.stderr));
  return new TextDecoder().decode(out.stdout).trim();
}

attackSuite("§4.3", [
  seeOrKillHostProcesses(),
  {
    id: "P2",
    name: "ptrace with strace and gdb",
    needs: ["strace", "gdb"],
    script: "strace -p 1 2>&1; echo strace=$?; gdb -batch -p 1 2>&1 | grep ptrace; " +
      "grep -c . /proc/1/mem 2>&1; grep -c . /proc/1/environ 2>&1",
    expect: (r) => {
      assertMatch(r.stdout, /ptrace\(PTRACE_ATTACH, 1\): Operation not permitted/);
      assertMatch(r.stdout, /^strace=1$/m);
      assertMatch(r.stdout, /^ptrace: Operation not permitted\.$/m);
      // The init is non-dumpable: its memory and environment are closed even to same-uid peers.
      assertMatch(r.stdout, /\/proc\/1\/mem: Permission denied/);
      assertMatch(r.stdout, /\/proc\/1\/environ: Permission denied/);
    },
  },
  {
    id: "P2-raw",
    name: "raw ptrace syscalls",
    waitsFor: NOT_X86_64,
    argv: syscallProbe({
      attach: "sc(101, 16, 1, 0, 0)", // PTRACE_ATTACH to the init
      seize: "sc(101, 0x4206, 1, 0, 0)", // PTRACE_SEIZE
      traceme: "sc(101, 0, 0, 0, 0)",
    }),
    expect: (r) =>
      assertEquals(keyValues(r.stdout), { attach: "EPERM", seize: "EPERM", traceme: "EPERM" }),
  },
  {
    id: "P3",
    name: "process_vm_readv/writev",
    waitsFor: NOT_X86_64,
    argv: syscallProbe({
      readv: "sc(310, 1, 0, 0, 0, 0, 0)",
      writev: "sc(311, 1, 0, 0, 0, 0, 0)",
      pidfd_getfd: "sc(438, 0, 0, 0)",
    }),
    expect: (r) =>
      assertEquals(keyValues(r.stdout), { readv: "EPERM", writev: "EPERM", pidfd_getfd: "EPERM" }),
  },
  backgroundPersistence(),
  {
    id: "P5",
    name: "out-of-band spawn via host services",
    needs: ["systemd-run", "dbus-send"],
    script: `systemd-run --user true; echo systemd_run=$?
dbus-send --session --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames; echo session=$?
dbus-send --system --dest=org.freedesktop.DBus / org.freedesktop.DBus.ListNames; echo system=$?
for s in /run/systemd/private /run/dbus/system_bus_socket /run/user /var/spool/cron /var/spool/at; do
  test -e "$s" && echo "present $s"
done; echo done`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals([out.systemd_run, out.session, out.system], ["1", "1", "1"]);
      assertNotIncludes(r.stdout, "present");
      assertMatch(r.stderr, /Failed to connect to bus/);
      assertMatch(r.stderr, /\/run\/dbus\/system_bus_socket: No such file or directory/);
      assertEquals(r.stdout.split("\n").at(-2), "done");
    },
  },
  hostIpc(),
  {
    id: "P7",
    name: "hostname and time changes",
    needs: ["hostname", "date"],
    prepare: () => Deno.hostname(),
    script: "hostname evil; echo hostname=$?; hostname; date -s 2030-01-01; echo date=$?",
    expect: (r, _ws, hostnameBefore) => {
      const out = keyValues(r.stdout);
      assertEquals([out.hostname, out.date], ["1", "1"]);
      assertMatch(r.stdout, /^coop$/m);
      assertMatch(r.stderr, /date: cannot set date: Operation not permitted/);
      assertEquals(Deno.hostname(), hostnameBefore);
      assert(new Date().getFullYear() < 2030, "the host clock is unchanged");
    },
  },
  {
    id: "P7-raw",
    name: "raw clock and hostname syscalls",
    waitsFor: NOT_X86_64,
    argv: syscallProbe({
      sethostname: "sc(170, 0, 0)",
      clock_settime: "sc(227, 0, 0)",
      settimeofday: "sc(164, 0, 0)",
      adjtimex: "sc(159, 0)",
      clock_adjtime: "sc(305, 0, 0)",
    }),
    expect: (r) =>
      assertEquals(keyValues(r.stdout), {
        sethostname: "EPERM",
        clock_settime: "EPERM",
        settimeofday: "EPERM",
        adjtimex: "EPERM",
        clock_adjtime: "EPERM",
      }),
  },
  {
    id: "P8",
    name: "kernel keyring",
    waitsFor: NOT_X86_64,
    argv: syscallProbe({
      show: "sc(250, 0, -4, 0)", // KEYCTL_GET_KEYRING_ID of @u
      add_key: "sc(248, 0, 0, 0, 0, -4)",
      request_key: "sc(249, 0, 0, 0, -4)",
    }),
    expect: (r) =>
      assertEquals(keyValues(r.stdout), { show: "EPERM", add_key: "EPERM", request_key: "EPERM" }),
  },
  {
    id: "P9",
    name: "no capabilities in any set",
    needs: ["capsh"],
    script: "grep -E '^Cap' /proc/self/status; capsh --print | head -3",
    expect: (r) => {
      for (const set of ["CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"]) {
        assertMatch(r.stdout, new RegExp(`^${set}:\\s+0000000000000000$`, "m"), set);
      }
      assertMatch(r.stdout, /^Current: =$/m);
      assertMatch(r.stdout, /^Bounding set =$/m);
      assertMatch(r.stdout, /^Ambient set =$/m);
    },
  },
  {
    id: "P11",
    name: "no_new_privs and seccomp are in force",
    script: "grep -E '^(NoNewPrivs|Seccomp)' /proc/self/status",
    expect: (r) => {
      assertMatch(r.stdout, /^NoNewPrivs:\s+1$/m);
      assertMatch(r.stdout, /^Seccomp:\s+2$/m);
      assertEquals(r.hardening.seccomp, true);
    },
  },
  signalTheGateway(),
]);

/** P1: only the sandbox's processes are visible; a host process and the gateway survive kills. */
function seeOrKillHostProcesses(): Attack {
  let victim: Deno.ChildProcess | undefined;
  return {
    id: "P1",
    name: "see or kill host processes",
    needs: ["ps"],
    prepare: () => {
      victim = new Deno.Command("sleep", { args: [marker()], stdout: "null", stderr: "null" })
        .spawn();
      return `${Deno.pid} ${victim.pid}`;
    },
    script: `set -- $1; ps -eo comm=; kill -9 "$1"; echo gateway=$?; kill -9 "$2"; echo victim=$?
kill -TERM -1; echo all=$?`,
    expect: (r, _ws, pids) => {
      const out = keyValues(r.stdout);
      const names = r.stdout.split("\n").filter((l) => l && !l.includes("="));
      assertEquals(names, ["coop-init", "sh", "ps"]);
      assertEquals([out.gateway, out.victim], ["1", "1"]);
      assertEquals(r.stderr.match(/kill: No such process/g)?.length, 3);
      const [, victimPid] = pids.split(" ").map(Number);
      assert(alive(victimPid), "the host process survived");
      assert(alive(Deno.pid));
    },
    teardown: async () => {
      victim?.kill("SIGKILL");
      await victim?.status;
    },
  };
}

/** P4: background, setsid and double-forked daemons end with the command. */
function backgroundPersistence(): Attack {
  const tag = marker();
  return {
    id: "P4",
    name: "background persistence",
    needs: ["python3", "setsid", "nohup"],
    script: `nohup sleep ${tag} >/dev/null 2>&1 &
setsid -f sleep ${tag}
(sleep ${tag} &) &
${
      python(`
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp("sleep", ["sleep", "${tag}"])
    os._exit(0)
os.wait()`)
    }
# Each daemon execs sleep after its fork, in its own time: count until all four run.
for i in $(seq 200); do
  n=$(ps -eo comm=,args= | grep -c "^sleep *sleep ${tag}"); [ "$n" = 4 ] && break; sleep 0.05
done; echo "$n"`,
    expect: (r) => {
      assertEquals(r.stdout, "4\n", "four daemons were running inside");
      assertEquals(r.exitCode, 0);
      assertEquals(hostProcessesWith(`sleep ${tag}`), []);
    },
  };
}

/** P6: a host SysV segment and a host POSIX shm file are invisible inside. */
function hostIpc(): Attack {
  const key = 0x0c00_0000 + Math.floor(Math.random() * 0xffffff);
  const shmFile = `/dev/shm/coop-canary-${crypto.randomUUID()}`;
  return {
    id: "P6",
    name: "SysV and POSIX IPC with the host",
    needs: ["ipcs", "python3"],
    waitsFor: NOT_X86_64,
    prepare: async () => {
      await Deno.writeTextFile(shmFile, "P6-SECRET");
      // shmget(key, 4096, IPC_CREAT | 0600) on the host; the id is the one an attacker would guess.
      return await hostPython(
        `import ctypes; print(ctypes.CDLL(None).shmget(${key}, 4096, 0o1600))`,
      );
    },
    script: `ipcs -m; echo shm_files=$(ls -A /dev/shm | wc -l); cat ${shmFile} 2>&1; ${
      python(`
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
def errname(r): return "OK" if r >= 0 else errno.errorcode[ctypes.get_errno()]
libc.shmat.restype = ctypes.c_long
print("shmget=" + errname(libc.shmget(${key}, 0, 0)))
print("shmat=" + errname(libc.shmat(int(sys.argv[1]), None, 0)))`)
    }`,
    expect: (r, _ws, id) => {
      assert(Number(id) >= 0, `host segment ${id}`);
      const out = keyValues(r.stdout);
      assertEquals(out.shmget, "ENOENT");
      assertEquals(out.shmat, "EINVAL");
      assertNotIncludes(r.stdout, `0x${key.toString(16)}`);
      assertEquals(out.shm_files, "0");
      assertMatch(r.stdout, /coop-canary-\S+: No such file/);
      assertNotIncludes(r.stdout, "P6-SECRET");
    },
    teardown: async (id) => {
      await Deno.remove(shmFile).catch(() => {});
      if (Number(id) >= 0) {
        await hostPython(`import ctypes; ctypes.CDLL(None).shmctl(${id}, 0, None)`); // IPC_RMID
      }
    },
  };
}

/** P13: the gateway cannot be stopped or killed from inside. */
function signalTheGateway(): Attack {
  return {
    id: "P13",
    name: "signal the gateway",
    needs: ["pgrep", "python3"],
    prepare: () => String(Deno.pid),
    script:
      `pgrep -l deno; echo pgrep=$?; kill -STOP "$1"; echo stop=$?; kill -KILL "$1"; echo kill=$?
${
        python(`
attempt("pidfd", lambda: os.pidfd_open(int(sys.argv[1])))
attempt("signal0", lambda: os.kill(int(sys.argv[1]), 0))`)
      }`,
    expect: (r) => {
      const out = keyValues(r.stdout);
      assertEquals([out.pgrep, out.stop, out.kill], ["1", "1", "1"]);
      assertEquals([out.pidfd, out.signal0], ["ESRCH", "ESRCH"]);
      assertNotIncludes(r.stdout, "deno");
      // Still running: the status of this very process is "R" or "S", never "T" (stopped).
      const state = /^State:\s+(\S)/m.exec(Deno.readTextFileSync("/proc/self/status"))?.[1];
      assert(state === "R" || state === "S", `gateway state ${state}`);
    },
  };
}

Deno.test({
  name: "§4.3 P10: a failed privilege drop stops the sandbox before the command runs",
  ignore: !SANDBOX_TESTS,
  sanitizeResources: false,
  sanitizeOps: false,
  fn: () =>
    withWorkspace(async (workspace) => {
      // There is no caps-bearing helper stage to attack: the init drops everything itself, and
      // any failure of that step is fatal. Forcing the failure shows it fails closed.
      for (const step of ["drop-capabilities", "landlock", "seccomp"] as const) {
        let error: unknown;
        try {
          await exec({ workspace }, ["sh", "-c", "touch /work/ran"], { failAt: step });
        } catch (e) {
          error = e;
        }
        assert(error instanceof SandboxSetupError, `${step}: ${error}`);
        assertEquals(error.step, step);
        assert(!(await Deno.stat(`${workspace}/ran`).catch(() => null)), `${step}: command ran`);
      }
    }),
});
