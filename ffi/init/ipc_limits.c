/* Memory outside the address space, on the rlimit path (ATTACKS R13).
 *
 * When the memory limit is RLIMIT_AS (no cgroup: src/sandbox/limits.ts), it bounds what each
 * process maps, not what the kernel holds for the sandbox elsewhere. A detached SysV segment,
 * a queue full of SysV messages or a set of semaphore arrays stays alive in the sandbox's IPC
 * namespace with nothing mapped: under a 64 MiB limit, 768 MiB were held this way, and the
 * defaults allow tens of GiB. The IPC namespace is the sandbox's own, and its sysctls belong to
 * the namespace's root, so the init bounds them to the limit before anything runs; POSIX
 * message queues are bounded by RLIMIT_MSGQUEUE, clamped here too. memfds, the other such
 * memory, are refused by the seccomp filter on this path (seccomp.c).
 *
 * The sysctls are written through the host's /proc, before the new root: the sandbox's own
 * /proc/sys is mounted read-only (and Landlock denies writes under /proc), which is also what
 * keeps the command from raising them again. The values apply to whoever opens the file: the
 * kernel looks the IPC sysctls up in the opener's IPC namespace, and lets its root write them
 * (ipc_permissions()). A kernel that keeps them owned by the host's root refuses, and setup
 * fails closed at ipc-limits. */
#include "init.h"

#include <asm/resource.h>
#include <linux/errno.h>
#include <linux/fcntl.h>

/* Worst-case kernel bytes per object, measured on 6.18 (slab growth per object) and rounded
 * up with margin: a zero-length SysV message ~92 (a 48-byte msg_msg in kmalloc-64 plus memcg
 * accounting), a semaphore ~64, a semaphore array's header ~520. */
#define COOP_MSG_COST 128
#define COOP_SEM_COST 128
#define COOP_SEM_ARRAY_COST 2048
/* msgmnb, the kernel's default queue size, written so that the budget below holds even if the
 * host raised it: a queue holds at most msgmnb bytes and msgmnb messages. */
#define COOP_MSGMNB 16384
/* semmsl and semopm stay at the kernel's defaults; semmni may not exceed IPCMNI's default. */
#define COOP_SEMMSL 32000
#define COOP_SEMOPM 500
#define COOP_SEMMNI_MAX 32000

struct coop_rlimit64 {
  unsigned long cur;
  unsigned long max;
};

unsigned long coop_address_space_limit(const struct coop_spec *spec) {
  for (int i = 0; i < spec->rlimit_count; i++)
    if (spec->rlimits[i].resource == RLIMIT_AS) return spec->rlimits[i].value;
  return 0;
}

static void write_sysctl(const char *path, const char *value) {
  long fd = coop_check(COOP_STEP_IPC_LIMITS,
                       SYS4(__NR_openat, AT_FDCWD, path, O_WRONLY | O_CLOEXEC, 0));
  unsigned long len = coop_strlen(value);
  long n = SYS3(__NR_write, fd, value, len);
  SYS1(__NR_close, fd);
  coop_check(COOP_STEP_IPC_LIMITS, n);
  if ((unsigned long)n != len) coop_fail(COOP_STEP_IPC_LIMITS, EIO);
}

static void write_number(const char *path, unsigned long value) {
  char text[24];
  coop_ulong_to_str(value, text);
  write_sysctl(path, text);
}

/* Appends the decimal value and a separator to out (large enough: 4 numbers of 20 digits). */
static char *append_number(char *out, unsigned long value, char separator) {
  coop_ulong_to_str(value, out);
  out += coop_strlen(out);
  *out++ = separator;
  *out = 0;
  return out;
}

static unsigned long at_least_one(unsigned long n) { return n ? n : 1; }

void coop_bound_ipc_memory(unsigned long limit, unsigned long page_size) {
  /* SysV shared memory: every segment together holds at most the limit (shmall counts pages
   * of all segments of the namespace; shmmax is one segment). Beyond it shmget gets ENOSPC or
   * EINVAL. shmmni, the number of segments, needs no bound: each counts in shmall. */
  write_number("/proc/sys/kernel/shmmax", limit);
  write_number("/proc/sys/kernel/shmall", at_least_one(limit / page_size));
  /* SysV messages and semaphores: a quarter of the limit each, at the costs above. */
  write_number("/proc/sys/kernel/msgmnb", COOP_MSGMNB);
  write_number("/proc/sys/kernel/msgmni", at_least_one(limit / 4 / (COOP_MSGMNB * COOP_MSG_COST)));
  unsigned long arrays = limit / 4 / COOP_SEM_ARRAY_COST;
  char sem[4 * 24], *p = sem;
  p = append_number(p, COOP_SEMMSL, ' ');
  p = append_number(p, at_least_one(limit / 4 / COOP_SEM_COST), ' ');
  p = append_number(p, COOP_SEMOPM, ' ');
  append_number(p, at_least_one(arrays < COOP_SEMMNI_MAX ? arrays : COOP_SEMMNI_MAX), '\n');
  write_sysctl("/proc/sys/kernel/sem", sem);
  /* POSIX message queues: the kernel charges each queue's full capacity against
   * RLIMIT_MSGQUEUE when it is created (counted per user namespace and uid, so for this
   * sandbox alone). The inherited hard limit is usually 800 KiB; never more than the limit. */
  struct coop_rlimit64 mq;
  coop_check(COOP_STEP_IPC_LIMITS, SYS4(__NR_prlimit64, 0, RLIMIT_MSGQUEUE, 0, &mq));
  if (mq.max > limit) {
    mq.cur = mq.max = limit;
    coop_check(COOP_STEP_IPC_LIMITS, SYS4(__NR_prlimit64, 0, RLIMIT_MSGQUEUE, &mq, 0));
  }
}
