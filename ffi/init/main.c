/* The init's sequence, top to bottom. Every step that can fail reports {step, errno} on the
 * report pipe and exits before the command runs. */
#include "init.h"
#include "../layers.h"

#include <linux/auxvec.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/prctl.h>
#include <linux/signal.h>
#include <linux/wait.h>

#define COOP_WIFEXITED(s) (((s) & 0x7f) == 0)
#define COOP_WEXITSTATUS(s) (((s) >> 8) & 0xff)
#define COOP_WTERMSIG(s) ((s) & 0x7f)

static struct coop_spec spec;


/* Blocks until the gateway sends the go byte — once our uid/gid maps are written (it can only
 * do that after clone) — with the spec (a memfd), for a root invoker the workspace as an
 * idmapped mount, and when the byte is COOP_GO_TERMINAL the command's pty last. The init may
 * have waited here long before the command exists (src/sandbox/prestart.ts). Puts the spec at
 * COOP_FD_SPEC, the pty at COOP_FD_TERMINAL (setting *terminal) and a held overlay at
 * COOP_FD_HELD (setting *held to it, else to -1), becomes the mapped uid/gid 0 (the invoking
 * user, or an unprivileged uid for root) and returns the workspace fd (COOP_FD_WORKSPACE) or -1. */
static int wait_for_go(int *terminal, int *held) {
  char go = 0;
  struct coop_iovec iov = {&go, 1};
  struct coop_cmsg_fds cmsg = {0};
  struct coop_msghdr msg = {0, 0, &iov, 1, &cmsg, sizeof cmsg, 0};
  long n;
  do n = SYS3(__NR_recvmsg, COOP_FD_GO, &msg, COOP_MSG_CMSG_CLOEXEC);
  while (n == -EINTR);
  if (n != 1) coop_fail(COOP_STEP_WAIT_GO, n < 0 ? -n : EPIPE);
  int count = 0;
  if (msg.controllen >= COOP_CMSG_HEADER + sizeof(int) && cmsg.level == COOP_SOL_SOCKET &&
      cmsg.type == COOP_SCM_RIGHTS)
    count = (int)((cmsg.len - COOP_CMSG_HEADER) / sizeof(int));
  *terminal = go == COOP_GO_TERMINAL || go == COOP_GO_HELD_TERMINAL;
  *held = go == COOP_GO_HELD || go == COOP_GO_HELD_TERMINAL;
  if (go != COOP_GO && go != COOP_GO_TERMINAL && !*held) coop_fail(COOP_STEP_WAIT_GO, EPROTO);
  if (count < 1 + *terminal + *held || count > 2 + *terminal + *held)
    coop_fail(COOP_STEP_WAIT_GO, EPROTO);
  const int *fds = cmsg.fds;
  /* The received fds got the lowest free numbers, which may be 4, 6 or 7 themselves: park
   * them above the targets first so that no dup3 below clobbers another one. */
  long parked[4] = {-1, -1, -1, -1};
  for (int i = 0; i < count; i++)
    parked[i] = coop_check(COOP_STEP_WAIT_GO,
                           SYS3(__NR_fcntl, fds[i], F_DUPFD_CLOEXEC, COOP_FD_FIRST_FREE));
  for (int i = 0; i < count; i++) SYS1(__NR_close, fds[i]);
  coop_check(COOP_STEP_WAIT_GO, SYS3(__NR_dup3, parked[0], COOP_FD_SPEC, O_CLOEXEC));
  if (*terminal) {
    coop_check(COOP_STEP_TERMINAL,
               SYS3(__NR_dup3, parked[count - 1], COOP_FD_TERMINAL, O_CLOEXEC));
    count--;
    SYS1(__NR_close, parked[count]);
  }
  if (*held) {
    coop_check(COOP_STEP_WAIT_GO, SYS3(__NR_dup3, parked[count - 1], COOP_FD_HELD, O_CLOEXEC));
    count--;
    SYS1(__NR_close, parked[count]);
    *held = COOP_FD_HELD;
  } else {
    *held = -1;
  }
  int tree = -1;
  if (count == 2) {
    coop_check(COOP_STEP_WAIT_GO, SYS3(__NR_dup3, parked[1], COOP_FD_WORKSPACE, O_CLOEXEC));
    tree = COOP_FD_WORKSPACE;
  }
  for (int i = 0; i < count; i++) SYS1(__NR_close, parked[i]);
  coop_check(COOP_STEP_ID_MAP, SYS3(__NR_setresgid, 0, 0, 0));
  coop_check(COOP_STEP_ID_MAP, SYS3(__NR_setresuid, 0, 0, 0));
  return tree;
}

/* Whether a child of the init is left that it may signal. /proc/1/task/1/children lists the
 * children; kill(pid, 0) answers EPERM for the proxy forwarder, which runs outside the init's
 * Landlock domain (forwarder.c) and so cannot be killed from here. Any doubt (no /proc, a read
 * error) answers no: the init then exits, and the kernel ends what is left. */
static int signalable_child_left(void) {
  long fd = SYS4(__NR_openat, AT_FDCWD, "/proc/1/task/1/children", O_RDONLY | O_CLOEXEC, 0);
  if (fd < 0) return 0;
  char buf[256];
  long pid = 0, n;
  int found = 0;
  while (!found && (n = SYS3(__NR_read, fd, buf, sizeof buf)) > 0) {
    for (long i = 0; i < n && !found; i++) {
      if (buf[i] >= '0' && buf[i] <= '9') {
        pid = pid * 10 + (buf[i] - '0');
        continue;
      }
      found = pid > 0 && SYS2(__NR_kill, pid, 0) == 0;
      pid = 0;
    }
  }
  if (!found && pid > 0) found = SYS2(__NR_kill, pid, 0) == 0;
  SYS1(__NR_close, fd);
  return found;
}

/* Kills every other process of the namespace and reaps them all. The kernel would kill them
 * when the init exits, but would reap them without adding their CPU time to the init's rusage
 * (a dying init ignores SIGCHLD), and the gateway measures the sandbox's CPU time from it.
 * kill(-1) reaches only this namespace's processes; killing again after each reap also ends a
 * child forked while the first kill went round. The proxy forwarder (and its relays) the init
 * may not signal: it is left to the kernel, and is Coop's plumbing, not the command's work. */
void coop_end_all(void) {
  int status;
  for (;;) {
    SYS2(__NR_kill, -1, SIGKILL);
    long r = SYS4(__NR_wait4, -1, &status, WNOHANG | __WALL, 0);
    if (r > 0) continue;
    if (r < 0 || !signalable_child_left()) return;
    /* A killed child is still dying: wait for it (it is the next to change state). */
    SYS4(__NR_wait4, -1, &status, __WALL, 0);
  }
}

/* pid 1 of the namespace: forwards the gateway's signals to the command, reaps every
 * process, and when the command has exited ends the rest and exits with its status.
 * COOP_SIG_END (timeout, cancel) is the gateway's SIGKILL for the command. */
__attribute__((noreturn)) static void supervise(long command) {
  /* Our copies of the command's stdio would keep the gateway's pipes (or its pty) open. */
  SYS1(__NR_close, 0), SYS1(__NR_close, 1), SYS1(__NR_close, 2);
  SYS1(__NR_close, COOP_FD_TERMINAL);
  unsigned long all = ~0UL;
  char info[128];
  for (;;) {
    long sig = SYS4(__NR_rt_sigtimedwait, &all, info, 0, 8);
    if (sig == SIGCHLD) {
      int status;
      long pid;
      while ((pid = SYS4(__NR_wait4, -1, &status, WNOHANG, 0)) > 0) {
        if (pid != command) continue;
        coop_report(COOP_REC_EXIT, status, 0);
        coop_end_all();
        coop_exit(COOP_WIFEXITED(status) ? COOP_WEXITSTATUS(status)
                                         : 128 + COOP_WTERMSIG(status));
      }
    } else if (sig == COOP_SIG_END) {
      SYS2(__NR_kill, command, SIGKILL);
    } else if (sig > 0) {
      SYS2(__NR_kill, command, sig);
    }
  }
}

/* The page size from the auxiliary vector, which follows argc, argv and envp on the initial
 * stack (sysconf without libc). */
static unsigned long page_size(const long *stack) {
  const long *p = stack + 1 + stack[0] + 1;
  while (*p) p++;
  for (p++; p[0] != AT_NULL; p += 2)
    if (p[0] == AT_PAGESZ) return (unsigned long)p[1];
  return 4096;
}

/* argv[1] is "net" when the trampoline cloned the init into a new network namespace. */
void coop_init_main(const long *stack) {
  const char *const *argv = (const char *const *)(stack + 1);
  int new_net = stack[0] > 1 && coop_streq(argv[1], "net");
  /* All signals arrive blocked (the trampoline blocks them around clone); they stay blocked
   * in the init, which takes them with sigtimedwait instead of handlers. */

#ifndef COOP_DISABLE_CLOSE_FDS
  coop_close_inherited_fds();
#endif
  /* Out of the gateway's session and process group before waiting: a signal meant for that
   * group (a terminal's Ctrl-C, a supervisor's SIGTERM) would otherwise stay pending here,
   * blocked, and be forwarded to whichever command this init later runs. */
  coop_step(0, COOP_STEP_SETSID);
  coop_check(COOP_STEP_SETSID, SYS0(__NR_setsid));
  /* And what reached us there before the setsid is dropped: it was the gateway's group's
   * (nothing else knows this init yet). Only the gateway's own end signal stays, for a
   * sandbox ended while it is still being set up. */
  unsigned long group_signals = ~0UL & ~(1UL << (COOP_SIG_END - 1));
  struct { long sec, nsec; } now = {0, 0};
  char dropped[128];
  while (SYS4(__NR_rt_sigtimedwait, &group_signals, dropped, &now, 8) > 0) {
  }
  /* The loopback depends on the namespace alone, so it comes up before the spec: off the
   * command's path (the gateway prestarts inits: src/sandbox/prestart.ts). */
  if (new_net) {
    coop_step(0, COOP_STEP_LOOPBACK);
    coop_loopback_up();
  }
  int terminal = 0;
  spec.workspace_fd = wait_for_go(&terminal, &spec.held_fd);
  /* Die with the gateway's thread that spawned us (the JS main thread). Armed only now:
   * setresuid above clears it. If the gateway died before this, its end of the go socket is
   * closed and we stop here instead of running unsupervised. */
  SYS5(__NR_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  char peek;
  if (SYS4(__NR_recvfrom, COOP_FD_GO, &peek, 1, COOP_MSG_DONTWAIT | COOP_MSG_PEEK) == 0)
    coop_fail(COOP_STEP_WAIT_GO, EPIPE);

  /* Exec'd from a memfd, the kernel named us "memfd:coop-init". */
  SYS5(__NR_prctl, PR_SET_NAME, "coop-init", 0, 0, 0);

  coop_step(0, COOP_STEP_SIGNALS);
  coop_reset_signals();
  coop_read_spec(&spec);
  /* A session's commands come on the go socket; no process the init starts may hold it. */
  /* Kept until the root is built when a fresh overlay goes back on it (rootfs.c). */
  if (spec.session || spec.hold)
    coop_check(COOP_STEP_SESSION, SYS3(__NR_fcntl, COOP_FD_GO, F_SETFD, FD_CLOEXEC));
  else SYS1(__NR_close, COOP_FD_GO);

  /* Inits are prestarted by shape (src/sandbox/prestart.ts): never let a spec that wants no
   * network run in one that shares the host's. */
  if (coop_streq(spec.net, "host") == new_net) coop_fail(COOP_STEP_NETWORK_MODE, EINVAL);
  /* A spec for a terminal runs only on the pty that came with it, and one without never
   * inherits a terminal. */
  if (spec.terminal != terminal) coop_fail(COOP_STEP_TERMINAL, EPROTO);

  /* A memory limit on each address space (the rlimit path) must also bound what the IPC
   * namespace holds outside them. Before the new root: through the host's /proc, since the
   * sandbox's /proc/sys will be read-only (ipc_limits.c). */
  coop_step(&spec, COOP_STEP_IPC_LIMITS);
  unsigned long address_space = coop_address_space_limit(&spec);
  if (address_space) coop_bound_ipc_memory(address_space, page_size(stack));

  coop_build_root(&spec);

  coop_step(&spec, COOP_STEP_HOSTNAME);
  coop_check(COOP_STEP_HOSTNAME,
             SYS2(__NR_sethostname, spec.hostname, coop_strlen(spec.hostname)));
  coop_step(&spec, COOP_STEP_CHDIR);
  coop_check(COOP_STEP_CHDIR, SYS1(__NR_chdir, spec.cwd));

  /* Transparent capture needs the namespace's CAP_NET_ADMIN (route, nf_tables) and
   * CAP_NET_BIND_SERVICE (port 53): before the capabilities go. */
  int proxied = coop_streq(spec.net, "proxy") || coop_streq(spec.net, "public");
  struct coop_capture capture = {-1, -1};
  if (proxied) {
    coop_step(&spec, COOP_STEP_CAPTURE);
    coop_setup_capture();
    coop_open_capture(&capture);
  }

  coop_step(&spec, COOP_STEP_DROP_CAPABILITIES);
  coop_drop_privileges();

  /* The forwarder and the capture helpers start without capabilities but before Landlock and
   * seccomp: they must connect to the proxy's unix socket, and stay outside the command's
   * Landlock domain. */
  if (proxied) {
    coop_step(&spec, COOP_STEP_PROXY_FORWARDER);
    coop_start_proxy_forwarder();
    coop_start_capture(&capture, &spec);
  }

  /* Landlock before seccomp: the filter doesn't deny the landlock_* calls, but installing
   * it last means nothing after it is left for the init to need. */
  coop_step(&spec, COOP_STEP_LANDLOCK);
#ifndef COOP_DISABLE_LANDLOCK
  int landlock_abi = coop_apply_landlock(&spec);
#else
  int landlock_abi = 0;
#endif
  coop_step(&spec, COOP_STEP_SECCOMP);
#ifndef COOP_DISABLE_SECCOMP
  int seccomp_on = coop_install_seccomp(&spec);
#else
  int seccomp_on = 0;
#endif

  /* Last: a low RLIMIT_NOFILE earlier would break setup, and RLIMIT_AS/RLIMIT_NPROC are
   * for the command, not for building its world. */
  coop_step(&spec, COOP_STEP_RLIMITS);
  coop_apply_rlimits(&spec);

  coop_report(COOP_REC_READY, landlock_abi, seccomp_on);
  if (spec.session) coop_session_serve(&spec);
  coop_step(&spec, COOP_STEP_FORK);
  long pid = coop_check(COOP_STEP_FORK, SYS5(__NR_clone, SIGCHLD, 0, 0, 0, 0));
  if (pid == 0) coop_exec_command(&spec);
  supervise(pid);
}
