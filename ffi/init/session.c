/* Session mode (spec tag 'S'): instead of one command, the init runs every command the gateway
 * sends on the go socket, in the world it built once — the same root, Landlock domain, seccomp
 * filter, limits and network — and reports each one's start, CPU time and end on the report
 * pipe, tagged with the gateway's id for it. Processes a command leaves in the background
 * (a dev server) keep running until the session ends: SIGKILL or COOP_SIG_END to the init, or
 * the gateway's end of the go socket closing (it died: its parent-death signal kills us too).
 *
 * Each command is forked from the init, so it starts with the init's restrictions already in
 * force; the child parses its own small spec (argv, env, cwd, rlimits) in its own copy of the
 * init's memory and execs, allocating nothing. */
#include "init.h"

#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/poll.h>
#include <linux/signal.h>
#include <linux/wait.h>

/* Commands that may run at once in one session; more are refused with EAGAIN. */
#define COOP_SESSION_SLOTS 64
#define COOP_SOL_SOCKET 1
#define COOP_SCM_RIGHTS 1
#define COOP_MSG_CMSG_CLOEXEC 0x40000000
#define COOP_MSG_DONTWAIT 0x40
#define COOP_SFD_CLOEXEC 02000000
#define COOP_SFD_NONBLOCK 04000

struct coop_pollfd {
  int fd;
  short events;
  short revents;
};

/* struct rusage as the kernel lays it out: two timevals, then 14 longs. */
struct coop_rusage {
  long utime_sec, utime_usec, stime_sec, stime_usec;
  long rest[14];
};

/* The msghdr layout of main.c, with room for the four fds of a run request. */
struct coop_iov {
  void *base;
  unsigned long len;
};
struct coop_msg {
  void *name;
  int namelen;
  struct coop_iov *iov;
  unsigned long iovlen;
  void *control;
  unsigned long controllen;
  int flags;
};
struct coop_cmsg4 {
  unsigned long len;
  int level;
  int type;
  int fds[4];
};
#define COOP_CMSG_HEADER (sizeof(unsigned long) + 2 * sizeof(int))

static struct {
  int id;
  long pid;
} slots[COOP_SESSION_SLOTS];

/* The id of the command this process runs, in a forked child; 0 in the init itself. */
int coop_session_command;

/* In the child: from the received fds to an exec'd command. Any failure is reported as
 * COOP_REC_REFUSED for this command (rt.c's coop_fail looks at coop_session_command). */
__attribute__((noreturn)) static void run_child(struct coop_spec *spec, int id, const int *fds) {
  coop_session_command = id;
  /* Its own session and process group: a timeout or cancel kills the group, and nothing the
   * command does can signal the other commands' groups by accident. */
  SYS0(__NR_setsid);
  /* The received fds got the lowest free numbers, 0-2 among them (the init closed its own
   * stdio): park them above the targets before placing them. */
  long parked[4];
  for (int i = 0; i < 4; i++) {
    parked[i] = coop_check(COOP_STEP_SESSION,
                           SYS3(__NR_fcntl, fds[i], F_DUPFD_CLOEXEC, COOP_FD_FIRST_FREE));
    SYS1(__NR_close, fds[i]);
  }
  coop_check(COOP_STEP_SESSION, SYS3(__NR_dup3, parked[0], COOP_FD_SPEC, O_CLOEXEC));
  for (int i = 1; i < 4; i++) coop_check(COOP_STEP_SESSION, SYS3(__NR_dup3, parked[i], i - 1, 0));
  for (int i = 0; i < 4; i++) SYS1(__NR_close, parked[i]);
  spec->argc = 0, spec->envc = 0, spec->rlimit_count = 0;
  coop_read_spec(spec);
  coop_check(COOP_STEP_CHDIR, SYS1(__NR_chdir, spec->cwd));
  coop_apply_rlimits(spec);
  coop_exec_command(spec);
}

static int free_slot(void) {
  for (int i = 0; i < COOP_SESSION_SLOTS; i++)
    if (slots[i].pid == 0) return i;
  return -1;
}

/* One request from the gateway; returns 0, or -1 when the channel is closed or broken. */
static int serve_request(struct coop_spec *spec) {
  int req[3] = {0, 0, 0};
  struct coop_iov iov = {req, sizeof req};
  struct coop_cmsg4 cmsg = {0};
  struct coop_msg msg = {0, 0, &iov, 1, &cmsg, sizeof cmsg, 0};
  long n = SYS3(__NR_recvmsg, COOP_FD_GO, &msg, COOP_MSG_CMSG_CLOEXEC | COOP_MSG_DONTWAIT);
  if (n == -EAGAIN || n == -EINTR) return 0;
  if (n != sizeof req) return -1; /* EOF, or a request split: not our gateway any more */
  int count = 0;
  if (msg.controllen >= COOP_CMSG_HEADER + sizeof(int) && cmsg.level == COOP_SOL_SOCKET &&
      cmsg.type == COOP_SCM_RIGHTS)
    count = (int)((cmsg.len - COOP_CMSG_HEADER) / sizeof(int));
  if (req[0] == COOP_OP_SIGNAL) {
    for (int i = 0; i < count; i++) SYS1(__NR_close, cmsg.fds[i]);
    for (int i = 0; i < COOP_SESSION_SLOTS; i++) {
      if (!slots[i].pid || slots[i].id != req[1]) continue;
      /* A child that has not reached its setsid() yet leads no group, and a signal to the
       * group would be lost (ESRCH): until it execs it is the only process to signal. Should
       * its setsid() come between the two calls, the group gets the signal once more. */
      if (SYS2(__NR_kill, -slots[i].pid, req[2]) == -ESRCH) {
        SYS2(__NR_kill, slots[i].pid, req[2]);
        SYS2(__NR_kill, -slots[i].pid, req[2]);
      }
    }
    return 0;
  }
  int slot = free_slot();
  long pid = -EPROTO;
  if (req[0] != COOP_OP_RUN || count != 4) pid = -EPROTO;
  else if (slot < 0) pid = -EAGAIN;
  else pid = SYS5(__NR_clone, SIGCHLD, 0, 0, 0, 0);
  if (pid == 0) run_child(spec, req[1], cmsg.fds);
  for (int i = 0; i < count; i++) SYS1(__NR_close, cmsg.fds[i]);
  if (pid < 0) {
    coop_report(COOP_REC_REFUSED, req[1], (int)-pid);
    coop_report(COOP_REC_ENDED, req[1], 126 << 8);
    return 0;
  }
  slots[slot].id = req[1];
  slots[slot].pid = pid;
  coop_report(COOP_REC_STARTED, req[1], (int)pid);
  return 0;
}

/* Reaps every exited child; a command's end is reported with its own CPU time. */
static void reap(void) {
  int status;
  struct coop_rusage ru;
  long pid;
  while ((pid = SYS4(__NR_wait4, -1, &status, WNOHANG | __WALL, &ru)) > 0) {
    for (int i = 0; i < COOP_SESSION_SLOTS; i++) {
      if (slots[i].pid != pid) continue;
      coop_report(COOP_REC_UTIME, slots[i].id, (int)(ru.utime_sec * 1000 + ru.utime_usec / 1000));
      coop_report(COOP_REC_STIME, slots[i].id, (int)(ru.stime_sec * 1000 + ru.stime_usec / 1000));
      coop_report(COOP_REC_ENDED, slots[i].id, status);
      slots[i].pid = 0;
    }
  }
}

void coop_session_serve(struct coop_spec *spec) {
  /* Our copies of the setup's stdio would keep the gateway's pipes open. */
  SYS1(__NR_close, 0), SYS1(__NR_close, 1), SYS1(__NR_close, 2);
  unsigned long mask = (1UL << (SIGCHLD - 1)) | (1UL << (COOP_SIG_END - 1));
  long sfd = coop_check(COOP_STEP_SESSION, SYS4(__NR_signalfd4, -1, &mask, 8,
                                                COOP_SFD_CLOEXEC | COOP_SFD_NONBLOCK));
  for (;;) {
    struct coop_pollfd fds[2] = {{COOP_FD_GO, POLLIN, 0}, {(int)sfd, POLLIN, 0}};
    long r = SYS5(__NR_ppoll, fds, 2, 0, 0, 8);
    if (r < 0 && r != -EINTR) break;
    if (fds[1].revents) {
      char info[128];
      int end = 0;
      while (SYS3(__NR_read, sfd, info, sizeof info) == sizeof info)
        if (*(unsigned int *)info == COOP_SIG_END) end = 1;
      if (end) break;
      reap();
    }
    if (fds[0].revents && serve_request(spec) < 0) break;
  }
  coop_end_all();
  coop_exit(0);
}
