/* Process hygiene for the init and the command: signals, inherited fds, privileges, exec. */
#include "init.h"
#include "../layers.h"

#include <linux/capability.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/prctl.h>
#include <linux/securebits.h>
#include <linux/signal.h>
#include <linux/sockios.h>
#include <asm/ioctls.h>

#ifndef AF_INET
#define AF_INET 2
#endif
#ifndef SOCK_DGRAM
#define SOCK_DGRAM 2
#endif
#define COOP_SOCK_CLOEXEC 02000000
#define COOP_IFF_UP 0x1

/* struct ifreq, reduced to what SIOC[GS]IFFLAGS use (<linux/if.h> drags in libc headers). */
struct coop_ifreq {
  char name[16];
  short flags;
  char pad[22];
};

struct kernel_sigaction {
  void *handler;
  unsigned long flags;
  void *restorer;
  unsigned long mask;
};

/* Deno ignores SIGPIPE, and ignored dispositions survive execve: reset every one. */
void coop_reset_signals(void) {
  struct kernel_sigaction dfl = {0};
  for (int sig = 1; sig <= 64; sig++) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    SYS4(__NR_rt_sigaction, sig, &dfl, 0, 8);
  }
}

/* The init starts with whatever the gateway had open without close-on-exec (sockets, files,
 * the pipes of other sandboxes); only 0-3 and the go socket stay. Done first: a prestarted init
 * may wait a long time for its spec, and must not keep the gateway's files open meanwhile. */
void coop_close_inherited_fds(void) {
  SYS1(__NR_close, COOP_FD_SPEC);      /* the spec and the workspace come with the go byte */
  SYS1(__NR_close, COOP_FD_WORKSPACE);
  SYS1(__NR_close, COOP_FD_TERMINAL);
  SYS1(__NR_close, COOP_FD_HELD);
  coop_check(COOP_STEP_CLOSE_FDS, SYS3(__NR_close_range, COOP_FD_FIRST_FREE, ~0U, 0));
  coop_check(COOP_STEP_CLOSE_FDS, SYS3(__NR_fcntl, COOP_FD_REPORT, F_SETFD, FD_CLOEXEC));
}

/* A new network namespace has lo down; programs that listen on 127.0.0.1 inside need it. */
void coop_loopback_up(void) {
  long fd = coop_check(COOP_STEP_LOOPBACK, SYS3(__NR_socket, AF_INET, SOCK_DGRAM | COOP_SOCK_CLOEXEC, 0));
  struct coop_ifreq req = {0};
  req.name[0] = 'l', req.name[1] = 'o';
  coop_check(COOP_STEP_LOOPBACK, SYS3(__NR_ioctl, fd, SIOCGIFFLAGS, &req));
  req.flags |= COOP_IFF_UP;
  coop_check(COOP_STEP_LOOPBACK, SYS3(__NR_ioctl, fd, SIOCSIFFLAGS, &req));
  SYS1(__NR_close, fd);
}

/* Leaves no capability in any set and no way to regain one: uid 0 inside the user namespace
 * would otherwise get a full permitted set back at every execve. */
void coop_drop_privileges(void) {
  const int step = COOP_STEP_DROP_CAPABILITIES;
#ifndef COOP_DISABLE_CAPABILITIES
  coop_check(step, SYS5(__NR_prctl, PR_SET_SECUREBITS,
                        SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
                            SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
                            SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED,
                        0, 0, 0));
  for (int cap = 0; cap < 64; cap++) {
    long r = SYS5(__NR_prctl, PR_CAPBSET_DROP, cap, 0, 0, 0);
    if (r == -EINVAL) break; /* past the kernel's last capability */
    coop_check(step, r);
  }
  coop_check(step, SYS5(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0));
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2] = {{0, 0, 0}, {0, 0, 0}};
  coop_check(step, SYS2(__NR_capset, &hdr, data));
#endif
  (void)step;
#ifndef COOP_DISABLE_NO_NEW_PRIVS
  coop_check(COOP_STEP_NO_NEW_PRIVS, SYS5(__NR_prctl, PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0));
#endif
  /* A non-dumpable init cannot be ptraced or have its memory or /proc/1/exe opened. */
  coop_check(COOP_STEP_NO_NEW_PRIVS, SYS5(__NR_prctl, PR_SET_DUMPABLE, 0, 0, 0, 0));
}

static const char *find_env(const struct coop_spec *spec, const char *name) {
  unsigned long n = coop_strlen(name);
  for (int i = 0; i < spec->envc; i++)
    if (coop_strneq(spec->envp[i], name, n) && spec->envp[i][n] == '=') return spec->envp[i] + n + 1;
  return 0;
}

static int has_slash(const char *s) {
  for (; *s; s++)
    if (*s == '/') return 1;
  return 0;
}

/* execvp: searches PATH from the sandbox's environment, never the gateway's. */
static long exec_search(const struct coop_spec *spec) {
  const char *file = spec->argv[0];
  if (has_slash(file)) return SYS3(__NR_execve, file, spec->argv, spec->envp);
  const char *path = find_env(spec, "PATH");
  if (!path) path = "/usr/local/bin:/usr/bin:/bin";
  long err = -ENOENT;
  char buf[COOP_PATH_MAX];
  while (*path) {
    unsigned long n = 0;
    while (path[n] && path[n] != ':') n++;
    unsigned long flen = coop_strlen(file);
    if (n + 1 + flen + 1 <= COOP_PATH_MAX) {
      memcpy(buf, path, n);
      buf[n] = '/';
      memcpy(buf + n + 1, file, flen + 1);
      long r = SYS3(__NR_execve, n ? buf : file, spec->argv, spec->envp);
      if (r == -EACCES) err = r;
      else if (r != -ENOENT && r != -ENOTDIR) return r;
    }
    path += n;
    if (*path == ':') path++;
  }
  return err;
}

/* The command's own session with the pty as its controlling terminal and stdio: the line
 * discipline's Ctrl-C, Ctrl-Z and hang-up reach its process group, and no other terminal is
 * reachable through /dev/tty (ATTACKS T4). A failure is a setup error: nothing has run. */
static void take_terminal(void) {
  const int step = COOP_STEP_CONTROLLING_TERMINAL;
  coop_check(step, SYS0(__NR_setsid));
  coop_check(step, SYS3(__NR_ioctl, COOP_FD_TERMINAL, TIOCSCTTY, 0));
  for (int fd = 0; fd < 3; fd++) coop_check(step, SYS3(__NR_dup3, COOP_FD_TERMINAL, fd, 0));
  SYS1(__NR_close, COOP_FD_TERMINAL);
}

void coop_exec_command(const struct coop_spec *spec) {
  unsigned long none = 0;
  if (spec->terminal) take_terminal();
  SYS4(__NR_rt_sigprocmask, SIG_SETMASK, &none, 0, 8);
  long err = -exec_search(spec);
  if (coop_session_command) coop_report(COOP_REC_REFUSED, coop_session_command, (int)err);
  else coop_report(COOP_REC_EXEC, (int)err, 0);
  coop_exit(err == ENOENT ? 127 : 126);
}
