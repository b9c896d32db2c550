// ATTACKS.md R13 — memory outside the address space. On the rlimit path the memory limit is
// RLIMIT_AS, which counts what each process maps: memfds and detached SysV segments hold
// memory no address space shows (768 MiB were held under 64 MiB). There the init bounds the IPC
// namespace and seccomp refuses memfds; on the cgroup path the cgroup counts it all.
import { assert, assertEquals, assertMatch } from "../../assert.ts";
import { exec } from "../../../src/sandbox/mod.ts";
import { sandboxTest, withWorkspace } from "../harness.ts";
import { execOnRlimitPath } from "../rlimit_path.ts";
import { keyValues } from "./attack_table.ts";

const MiB = 2 ** 20;
const LIMIT = 64 * MiB;
const NO_PYTHON = (() => {
  try {
    return Deno.statSync("/usr/bin/python3").isFile ? undefined : "needs /usr/bin/python3";
  } catch {
    return "needs /usr/bin/python3";
  }
})();

/** A sandbox test that needs python3, its skip reason in the name. */
function r13Test(name: string, fn: () => Promise<void>, skip = NO_PYTHON): void {
  sandboxTest(
    { name: `§4.5 R13: ${name}${skip ? ` — skipped: ${skip}` : ""}`, ignore: !!skip },
    fn,
  );
}

/** A python3 program with ctypes' libc, `err()` naming errno, and `say()` printing at once. */
function program(body: string): string[] {
  return [
    "python3",
    "-c",
    `import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
MiB = 1 << 20
def err(): return errno.errorcode[ctypes.get_errno()]
def say(key, value): print("%s=%s" % (key, value), flush=True)
${body}`,
  ];
}

/** Creates 8 MiB SysV segments, fills each, detaches it, until refused or CAP bytes are held. */
const FILL_SYSV_SHM = `
held = 0
while held < CAP:
    sid = libc.shmget(0, 8 * MiB, 0o1600)
    if sid < 0: say("shm_stop", err()); break
    a = libc.shmat(sid, None, 0)
    if a is None or a == ctypes.c_void_p(-1).value: say("shmat", err()); break
    ctypes.memset(a, 1, 8 * MiB); libc.shmdt(ctypes.c_void_p(a)); held += 8 * MiB
    say("shm_held_mib", held // MiB)
`;

r13Test("memfd_create and memfd_secret answer ENOSYS under memory 64 MiB", async () => {
  await withWorkspace(async (workspace) => {
    const r = await execOnRlimitPath(
      { workspace, memoryBytes: LIMIT },
      program(`
try: os.memfd_create("x"); say("memfd", "OK")
except OSError as e: say("memfd", errno.errorcode[e.errno])
say("memfd_secret", "OK" if libc.syscall(447, 0) >= 0 else err())
# What callers fall back to: POSIX shared memory in /dev/shm, a tmpfs with a size.
from multiprocessing import shared_memory
m = shared_memory.SharedMemory(create=True, size=MiB); m.buf[0] = 1; m.close(); m.unlink()
say("shm_open", "OK")
st = os.statvfs("/dev/shm"); say("dev_shm_mib", st.f_blocks * st.f_frsize // MiB)`),
    );
    assertEquals(keyValues(r.stdout), {
      memfd: "ENOSYS",
      memfd_secret: "ENOSYS",
      shm_open: "OK",
      dev_shm_mib: "64", // tmpSizeBytes, the default
    }, r.stderr);
  });
});

r13Test("detached SysV shared memory stops at the limit (64 MiB)", async () => {
  await withWorkspace(async (workspace) => {
    const r = await execOnRlimitPath(
      { workspace, memoryBytes: LIMIT },
      program(`CAP = 256 * MiB
${FILL_SYSV_SHM}
say("one_big_segment", "OK" if libc.shmget(0, 128 * MiB, 0o1600) >= 0 else err())`),
    );
    const out = keyValues(r.stdout);
    // 8 segments of 8 MiB fill shmall exactly; the ninth is refused.
    assertEquals([out.shm_stop, out.shm_held_mib], ["ENOSPC", "64"], r.stdout + r.stderr);
    assertEquals(out.one_big_segment, "EINVAL"); // over shmmax
  });
});

r13Test("SysV semaphores and message queues are bounded too", async () => {
  await withWorkspace(async (workspace) => {
    const r = await execOnRlimitPath(
      { workspace, memoryBytes: LIMIT },
      program(`
sems = 0
while sems < 10**6:  # 4x the bound: an unbounded kernel would stop here
    if libc.semget(0, 32000, 0o1600) < 0: say("sem_stop", err()); break
    sems += 32000
say("sems", sems)
queues = 0
while queues < 100:
    if libc.msgget(0, 0o1600) < 0: say("msg_stop", err()); break
    queues += 1
say("queues", queues)
say("msgmnb", open("/proc/sys/kernel/msgmnb").read().strip())`),
    );
    const out = keyValues(r.stdout);
    assertEquals([out.sem_stop, out.msg_stop, out.msgmnb], ["ENOSPC", "ENOSPC", "16384"]);
    // A quarter of the limit each: 64 MiB / 4 / 128 B per semaphore; 64 MiB / 4 / 2 MiB per
    // full queue (16384 messages of ~92 bytes of kernel memory each, at most).
    assert(Number(out.sems) <= 131_072, `${out.sems} semaphores`);
    assertEquals(out.queues, "8");
  });
});

r13Test(
  "the bounds cannot be raised from inside, and POSIX queues stay under the limit",
  async () => {
    await withWorkspace(async (workspace) => {
      const r = await execOnRlimitPath(
        { workspace, memoryBytes: LIMIT },
        program(`
import resource
for name in ("shmall", "shmmax", "msgmni", "sem"):
    try:
        open("/proc/sys/kernel/" + name, "w").write("4294967296\\n"); say(name, "OK")
    except OSError as e: say(name, errno.errorcode[e.errno])
soft, hard = resource.getrlimit(resource.RLIMIT_MSGQUEUE)
say("msgqueue_hard", hard)
try: resource.setrlimit(resource.RLIMIT_MSGQUEUE, (hard * 2, hard * 2)); say("raise", "OK")
except (OSError, ValueError): say("raise", "refused")`),
      );
      const out = keyValues(r.stdout);
      assertEquals([out.shmall, out.shmmax, out.msgmni, out.sem], [
        "EROFS",
        "EROFS",
        "EROFS",
        "EROFS",
      ]);
      assert(Number(out.msgqueue_hard) <= LIMIT, `RLIMIT_MSGQUEUE ${out.msgqueue_hard}`);
      assertEquals(out.raise, "refused");
    });
  },
);

r13Test("without a memory limit nothing is refused (memfd works)", async () => {
  await withWorkspace(async (workspace) => {
    const r = await execOnRlimitPath(
      { workspace },
      program(`fd = os.memfd_create("x"); os.write(fd, b"x" * MiB); say("memfd", "OK")`),
    );
    assertEquals(keyValues(r.stdout), { memfd: "OK" }, r.stderr);
  });
});

const NOT_ROOT = Deno.uid() === 0 ? NO_PYTHON : "the cgroup path needs root on this host";

r13Test(
  "on the cgroup path, detached SysV shm is counted by the cgroup (OOM inside)",
  async () => {
    await withWorkspace(async (workspace) => {
      const r = await exec(
        { workspace, memoryBytes: LIMIT },
        program(`CAP = 256 * MiB\n${FILL_SYSV_SHM}`),
      );
      assertEquals(r.limits.path, "cgroup-v1");
      const held = Number(keyValues(r.stdout).shm_held_mib ?? 0);
      assertEquals([r.oomKilled, r.signal], [true, "SIGKILL"], r.stdout + r.stderr);
      assert(held < 64, `${held} MiB held under a 64 MiB cgroup`);
    });
  },
  NOT_ROOT,
);

r13Test(
  "on the cgroup path, memfd pages are counted by the cgroup (OOM inside)",
  async () => {
    await withWorkspace(async (workspace) => {
      const r = await exec(
        { workspace, memoryBytes: LIMIT },
        program(`
fd = os.memfd_create("x")
chunk = b"x" * MiB
for i in range(1, 1025):
    os.write(fd, chunk); say("memfd_mib", i)`),
      );
      assertEquals(r.limits.path, "cgroup-v1");
      const held = Number(keyValues(r.stdout).memfd_mib ?? 0);
      assertEquals([r.oomKilled, r.signal], [true, "SIGKILL"], r.stdout + r.stderr);
      assert(held < 64, `${held} MiB held under a 64 MiB cgroup`);
      assertMatch(r.stdout, /memfd_mib=1\n/); // memfd itself is allowed there
    });
  },
  NOT_ROOT,
);
