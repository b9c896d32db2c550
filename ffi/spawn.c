/* The trampoline: the only code that runs between clone and the init's execve.
 *
 * The child is made posix_spawn-style with CLONE_VM|CLONE_VFORK, so it costs no page-table
 * copy of the (large, multithreaded) Deno process; it shares Deno's memory until it execs,
 * which is why it runs only raw system calls, touches nothing but its own arguments and
 * allocates nothing. Everything else — mounts, capabilities, the command — happens in the
 * init, a separate static binary with its own address space (ffi/init/).
 *
 * TypeScript calls these functions through Deno.dlopen (src/sandbox/ffi.ts). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "layers.h"
#include "protocol.h"
#include "sys.h"
#include "workspace.h"

#ifndef COOP_SOURCE_HASH
#error "build with scripts/build_ffi.ts: it defines COOP_SOURCE_HASH"
#endif

extern const unsigned char coop_init_blob[];
extern const unsigned long coop_init_blob_size;

#define CHILD_STACK_SIZE (64 * 1024)

/* Indexes of the int32 arrays exchanged with TypeScript (src/sandbox/ffi.ts). */
enum { P_NEW_NET, P_OUTER_UID, P_OUTER_GID, P_WANT_STDIN, P_TERMINAL, P_HELD, P_COUNT };
enum { O_PID, O_PIDFD, O_STDIN, O_STDOUT, O_STDERR, O_REPORT, O_GO, O_ERR_STEP, O_ERR_ERRNO, O_COUNT };

/* The init's fds 0-3 and 5 (fd 4, the spec, comes later with the go byte). */
static const int child_fd_numbers[5] = {0, 1, 2, COOP_FD_REPORT, COOP_FD_GO};

struct child_args {
  int fds[5]; /* become the init's stdin, stdout, stderr, report and go */
  int init_fd;
  const char *const *argv;
  volatile int exec_errno; /* written by the child if execveat fails (memory is shared) */
};

/* argv[1] tells the init whether it has a network namespace of its own (ffi/init/main.c). */
static const char *const init_argv[] = {"coop-init", NULL};
static const char *const init_argv_net[] = {"coop-init", "net", NULL};
static const char *const init_envp[] = {NULL};

const char *coop_source_hash(void) { return COOP_SOURCE_HASH; }

/* "" in a release build; else the protections this debug build leaves out, comma-separated. */
const char *coop_disabled_layers(void) {
  return ""
#ifdef COOP_DISABLE_SECCOMP
         "seccomp,"
#endif
#ifdef COOP_DISABLE_LANDLOCK
         "landlock,"
#endif
#ifdef COOP_DISABLE_CAPABILITIES
         "capabilities,"
#endif
#ifdef COOP_DISABLE_NO_NEW_PRIVS
         "no-new-privs,"
#endif
#ifdef COOP_DISABLE_NETNS
         "netns,"
#endif
#ifdef COOP_DISABLE_PIDNS
         "pidns,"
#endif
#ifdef COOP_DISABLE_CLOSE_FDS
         "close-fds,"
#endif
      ;
}

/* The init binary, in a sealed memfd made once per process. */
static int init_memfd(void) {
  static int cached = -1;
  int fd = __atomic_load_n(&cached, __ATOMIC_ACQUIRE);
  if (fd >= 0) return fd;
  fd = memfd_create("coop-init", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -errno;
  unsigned long off = 0;
  while (off < coop_init_blob_size) {
    ssize_t n = write(fd, coop_init_blob + off, coop_init_blob_size - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      close(fd);
      return -err;
    }
    off += (unsigned long)n;
  }
  /* Sealed: nothing, not even a process that inherits this fd, can change the init. */
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  int expected = -1;
  if (!__atomic_compare_exchange_n(&cached, &expected, fd, 0, __ATOMIC_ACQ_REL,
                                   __ATOMIC_ACQUIRE)) {
    close(fd);
    return expected;
  }
  return fd;
}

static int spec_memfd(const uint8_t *spec, size_t len) {
  int fd = memfd_create("coop-spec", MFD_CLOEXEC);
  if (fd < 0) return -errno;
  size_t off = 0;
  while (off < len) {
    ssize_t n = write(fd, spec + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      int err = n < 0 ? errno : EIO;
      close(fd);
      return -err;
    }
    off += (size_t)n;
  }
  if (lseek(fd, 0, SEEK_SET) < 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  return fd;
}

/* The child has every capability in its new user namespace, but its uid is not mapped until
 * the gateway writes the maps, which it can only do after clone — and execve by an unmapped
 * (non-zero) uid clears the capabilities. Raising them as ambient capabilities carries them
 * into the init, which switches to the mapped uid 0 and later drops them all. */
static void keep_capabilities_across_exec(void) {
  struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
  struct __user_cap_data_struct data[2];
  if (SYS2(__NR_capget, &hdr, data) < 0) return;
  data[0].inheritable = data[0].permitted;
  data[1].inheritable = data[1].permitted;
  if (SYS2(__NR_capset, &hdr, data) < 0) return;
  for (int cap = 0; cap < 64; cap++)
    if (SYS5(__NR_prctl, PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0) == -EINVAL) break;
}

/* When root invokes, the sandbox's root is an unprivileged uid, which would neither reach a
 * root-owned workspace nor leave files owned by the invoker. An idmapped mount of the
 * workspace, mapped through the sandbox's own user namespace, makes the invoker's files the
 * sandbox root's and stores what the sandbox creates as the invoker's. Only a process with
 * CAP_SYS_ADMIN in the initial namespace can make it, so the gateway makes it here and hands
 * it to the init with the go byte. A symlink anywhere in the path fails it (ffi/workspace.h). */
static int idmapped_workspace(pid_t pid, const char *workspace) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/ns/user", pid);
  int userns = open(path, O_RDONLY | O_CLOEXEC);
  if (userns < 0) return -errno;
  int tree = (int)coop_workspace_tree(workspace);
  if (tree < 0) {
    close(userns);
    return tree;
  }
  struct mount_attr attr = {
      .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
      .userns_fd = (uint64_t)userns,
  };
  long r = syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr);
  int err = errno;
  close(userns);
  if (r < 0) {
    close(tree);
    return -err;
  }
  return tree;
}

/* Sends the init its go byte with `count` fds (SCM_RIGHTS): the spec, then the workspace mount
 * when there is one, then the terminal when the byte is COOP_GO_TERMINAL. */
static int send_go(int sock, char byte, const int *fds, int count) {
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    struct cmsghdr hdr;
    char buf[CMSG_SPACE(4 * sizeof(int))];
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  msg.msg_control = control.buf;
  msg.msg_controllen = CMSG_SPACE(count * sizeof(int));
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(count * sizeof(int));
  memcpy(CMSG_DATA(c), fds, count * sizeof(int));
  ssize_t n;
  do n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == 1 ? 0 : n < 0 ? -errno : -EPIPE;
}

/* Runs in the child, on its own stack, in Deno's memory, with every signal blocked. */
static int child_main(void *p) {
  struct child_args *a = p;
  long tmp[5], exe;
  keep_capabilities_across_exec();
  /* Move everything above any target number first, so no dup3 below clobbers a source. */
  for (int i = 0; i < 5; i++) {
    tmp[i] = SYS3(__NR_fcntl, a->fds[i], F_DUPFD_CLOEXEC, 64);
    if (tmp[i] < 0) goto fail_tmp;
  }
  exe = SYS3(__NR_fcntl, a->init_fd, F_DUPFD_CLOEXEC, 64);
  if (exe < 0) {
    tmp[0] = exe;
    goto fail_tmp;
  }
  for (int i = 0; i < 5; i++) {
    long r = SYS3(__NR_dup3, tmp[i], child_fd_numbers[i], 0);
    if (r < 0) {
      a->exec_errno = (int)-r;
      SYS1(__NR_exit, 127);
    }
  }
  long r = SYS5(__NR_execveat, exe, "", a->argv, init_envp, AT_EMPTY_PATH);
  a->exec_errno = (int)-r;
  SYS1(__NR_exit, 127);
  return 127;
fail_tmp:
  for (int i = 0; i < 5; i++)
    if (tmp[i] < 0) {
      a->exec_errno = (int)-tmp[i];
      break;
    }
  SYS1(__NR_exit, 127);
  return 127;
}

static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n = write(fd, text, strlen(text));
  int err = n < 0 ? errno : 0;
  close(fd);
  return -err;
}

/* Sandbox root ↔ the given outer ids. Only the parent can write these maps for a root
 * invoker mapping an unprivileged uid; doing it here for everyone keeps one code path. */
static int write_id_maps(pid_t pid, int uid, int gid) {
  char path[64], map[64];
  int r;
  snprintf(path, sizeof path, "/proc/%d/setgroups", pid);
  if ((r = write_file(path, "deny"))) return r;
  snprintf(path, sizeof path, "/proc/%d/uid_map", pid);
  snprintf(map, sizeof map, "0 %d 1\n", uid);
  if ((r = write_file(path, map))) return r;
  snprintf(path, sizeof path, "/proc/%d/gid_map", pid);
  snprintf(map, sizeof map, "0 %d 1\n", gid);
  return write_file(path, map);
}

static void close_all(int *fds, int n) {
  for (int i = 0; i < n; i++)
    if (fds[i] >= 0) close(fds[i]), fds[i] = -1;
}

static int fail(int32_t *out, int step, int err) {
  out[O_ERR_STEP] = step;
  out[O_ERR_ERRNO] = err;
  return -1;
}

/* Kills and reaps a sandbox we started, and closes our fds of it (those still open). */
static void discard(int32_t *out) {
  if (out[O_PIDFD] >= 0) syscall(SYS_pidfd_send_signal, out[O_PIDFD], SIGKILL, NULL, 0);
  if (out[O_PID] > 0) waitpid(out[O_PID], NULL, __WALL);
  for (int i = O_PID + 1; i <= O_GO; i++)
    if (out[i] >= 0) close(out[i]), out[i] = -1;
  out[O_PID] = -1;
}

/* The first half of a sandbox, which needs nothing of the command: the init in fresh
 * namespaces with its uid/gid maps written, blocked until coop_start sends its spec. Clone and
 * the network namespace are most of a sandbox's cost, so the gateway runs this ahead of time
 * for the next command (src/sandbox/prestart.ts). params: P_NEW_NET, P_OUTER_UID, P_OUTER_GID.
 * Returns 0 with out[O_PID..O_GO] set — the caller owns them: coop_start or coop_discard —
 * or -1 with out[O_ERR_*] set and nothing left behind. */
int coop_prestart(const int32_t *params, int32_t *out) {
  int pipes[5][2], n_pipes = 0;
  for (int i = 0; i < O_COUNT; i++) out[i] = -1;

  int exe = init_memfd();
  if (exe < 0) return fail(out, COOP_STEP_EXEC_INIT, -exe);
  for (; n_pipes < 5; n_pipes++) {
    int r = n_pipes < 4 ? pipe2(pipes[n_pipes], O_CLOEXEC)
                        : socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pipes[n_pipes]);
    if (r < 0) {
      int err = errno;
      close_all(&pipes[0][0], n_pipes * 2);
      return fail(out, COOP_STEP_CLONE, err);
    }
  }
  /* pipes: 0 stdin, 1 stdout, 2 stderr, 3 report, 4 go (a socket: it carries fds) */
  struct child_args args = {
      .fds = {pipes[0][0], pipes[1][1], pipes[2][1], pipes[3][1], pipes[4][0]},
      .init_fd = exe,
      .argv = params[P_NEW_NET] ? init_argv_net : init_argv,
      .exec_errno = 0,
  };
  char *stack = malloc(CHILD_STACK_SIZE);
  if (!stack) {
    close_all(&pipes[0][0], 10);
    return fail(out, COOP_STEP_CLONE, ENOMEM);
  }

  int flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID |
              CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWCGROUP | SIGCHLD;
  if (params[P_NEW_NET]) flags |= CLONE_NEWNET;
#ifdef COOP_DISABLE_NETNS
  flags &= ~CLONE_NEWNET;
#endif
#ifdef COOP_DISABLE_PIDNS
  flags &= ~CLONE_NEWPID;
#endif
  int pidfd = -1;
  sigset_t all, old;
  sigfillset(&all);
  /* The child must never run one of Deno's signal handlers on Deno's memory. */
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = clone(child_main, stack + CHILD_STACK_SIZE, flags, &args, &pidfd);
  int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  free(stack); /* CLONE_VFORK: the child has exec'd or exited by now */

  /* The child's ends now live in the init (or nowhere). */
  close(pipes[0][0]), close(pipes[1][1]), close(pipes[2][1]), close(pipes[3][1]);
  close(pipes[4][0]);
  out[O_STDIN] = pipes[0][1];
  out[O_STDOUT] = pipes[1][0];
  out[O_STDERR] = pipes[2][0];
  out[O_REPORT] = pipes[3][0];
  /* Kept open until the sandbox is reaped: an init that has not armed its parent-death signal
   * yet (an idle one) reads EOF on it if we die, and exits (ffi/init/main.c). */
  out[O_GO] = pipes[4][1];
  if (pid < 0) {
    discard(out);
    return fail(out, COOP_STEP_CLONE, clone_errno);
  }
  out[O_PID] = pid;
  out[O_PIDFD] = pidfd;
  int step = 0, err = 0;
  if (args.exec_errno) {
    step = COOP_STEP_EXEC_INIT, err = args.exec_errno;
  } else {
    int r = write_id_maps(pid, params[P_OUTER_UID], params[P_OUTER_GID]);
    if (r) step = COOP_STEP_ID_MAP, err = -r;
  }
  if (step) {
    discard(out);
    return fail(out, step, err);
  }
  /* Our end only (the init's is another open file): see coop_read_report. */
  fcntl(out[O_REPORT], F_SETFL, O_NONBLOCK);
  return 0;
}

/* The error an init recorded before it exited, if it did: a prestarted init that fails before
 * its go byte (the loopback comes up then) shows only as a go byte that cannot be sent. */
static void recorded_error(int32_t *out, int *step, int *err) {
  waitpid(out[O_PID], NULL, __WALL);
  out[O_PID] = -1;
  struct coop_record rec;
  while (read(out[O_REPORT], &rec, sizeof rec) == sizeof rec) {
    if (rec.kind == COOP_REC_ERROR) {
      *step = rec.a, *err = rec.b;
      return;
    }
  }
}

/* The second half: gives a prestarted init (out, from coop_prestart) its spec and lets it
 * build the sandbox and run the command. params: P_WANT_STDIN, and P_TERMINAL: 0, or 1 + the
 * fd of a pty's slave (coop_pty_open; the + 1 keeps a zeroed array from naming fd 0) that
 * becomes the command's stdio and controlling terminal — the caller keeps its fd and closes it
 * once this returns.
 * idmap_workspace: NULL, or the workspace to hand over as an idmapped mount (root invokers).
 * cgroup_dirs: NULL, or the cgroup directories to place the init in before it may run
 * (NUL-separated, ended by an empty string; the cgroup v1 limits path).
 * Returns 0: the caller still owns pid (reap it), pidfd, the pipes, the report pipe and the go
 * socket (close it after reaping). Or -1 with out[O_ERR_*] set: the sandbox is gone, killed
 * and reaped, and its fds closed — nothing of the command ran. */
int coop_start(const uint8_t *spec, size_t spec_len, const int32_t *params,
               const char *idmap_workspace, const char *cgroup_dirs, int32_t *out) {
  int step = 0, err = 0, tree = -1;
  int spec_fd = spec_memfd(spec, spec_len);
  if (spec_fd < 0) step = COOP_STEP_SPEC, err = -spec_fd;
  if (!step && cgroup_dirs) {
    int r = coop_cgroup_attach(out[O_PID], cgroup_dirs);
    if (r) step = COOP_STEP_CGROUP, err = -r;
  }
  if (!step && idmap_workspace) {
    tree = idmapped_workspace(out[O_PID], idmap_workspace);
    if (tree < 0) step = COOP_STEP_MOUNT_WORKSPACE, err = -tree;
  }
  if (!step) {
    int terminal = params[P_TERMINAL] - 1, held = params[P_HELD] - 1;
    int fds[4] = {spec_fd, -1, -1, -1}, count = 1;
    if (tree >= 0) fds[count++] = tree;
    if (held >= 0) fds[count++] = held;
    if (terminal >= 0) fds[count++] = terminal;
    char byte = held >= 0 ? (terminal >= 0 ? COOP_GO_HELD_TERMINAL : COOP_GO_HELD)
                          : (terminal >= 0 ? COOP_GO_TERMINAL : COOP_GO);
    int r = send_go(out[O_GO], byte, fds, count);
    if (r) step = COOP_STEP_WAIT_GO, err = -r;
    /* The init's end is closed: it has exited, or is exiting, maybe with a reason. */
    if (r == -EPIPE || r == -ECONNRESET) recorded_error(out, &step, &err);
  }
  if (tree >= 0) close(tree);
  if (spec_fd >= 0) close(spec_fd);
  if (step) {
    discard(out);
    return fail(out, step, err);
  }
  if (!params[P_WANT_STDIN]) close(out[O_STDIN]), out[O_STDIN] = -1;
  return 0;
}

/* The fresh overlay a sandbox's init sent back on its go socket to be held (rootfs.c,
 * send_overlay_back), without waiting: its fd (close-on-exec), or -EAGAIN when none came. */
int coop_recv_held(int go) {
  char byte;
  struct iovec iov = {.iov_base = &byte, .iov_len = 1};
  union {
    struct cmsghdr hdr;
    char buf[CMSG_SPACE(sizeof(int))];
  } control;
  memset(&control, 0, sizeof control);
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  msg.msg_control = control.buf;
  msg.msg_controllen = sizeof control.buf;
  ssize_t n;
  do n = recvmsg(go, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return -errno;
  struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
  if (n != 1 || byte != 'o' || !c || c->cmsg_type != SCM_RIGHTS ||
      c->cmsg_len != CMSG_LEN(sizeof(int))) {
    /* Anything else closes what came with it. */
    for (; c; c = CMSG_NXTHDR(&msg, c))
      if (c->cmsg_type == SCM_RIGHTS)
        for (size_t i = 0; i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int); i++)
          close(((int *)CMSG_DATA(c))[i]);
    return -EPROTO;
  }
  int fd;
  memcpy(&fd, CMSG_DATA(c), sizeof fd);
  return fd;
}

/* Ends a prestarted sandbox that will not be used: kills and reaps the init, closes its fds. */
void coop_discard(int32_t *out) { discard(out); }

/* wait4(pid, WNOHANG) for one known child: 0 while it runs, its pid once reaped. Once reaped,
 * cpu_us (when not NULL) gets its user and system CPU time in microseconds. For a sandbox's init
 * that is the whole sandbox: the kernel adds every child a process reaps to its own rusage, and
 * the init reaps every process of its pid namespace (those still alive when it exits are killed
 * and reaped in its exit, before it becomes a zombie). */
int coop_wait(int pid, int32_t *status, int64_t *cpu_us) {
  int st = 0;
  struct rusage ru;
  int r = wait4(pid, &st, WNOHANG | __WALL, &ru);
  if (r < 0) return -errno;
  *status = st;
  if (r > 0 && cpu_us) {
    cpu_us[0] = (int64_t)ru.ru_utime.tv_sec * 1000000 + ru.ru_utime.tv_usec;
    cpu_us[1] = (int64_t)ru.ru_stime.tv_sec * 1000000 + ru.ru_stime.tv_usec;
  }
  return r;
}

/* Reads up to cap bytes of the report pipe fd. Called once the init is reaped: every writer
 * is gone by then (the init's whole pid namespace is), so the records are all in the pipe and
 * this ends at EOF without waiting; the fd is non-blocking all the same, so that a writer left
 * alive by a bug could never freeze the event loop. Returns the bytes read (0 at the end),
 * or -errno (-EAGAIN: nothing more now). */
long coop_read_report(int fd, uint8_t *buf, long cap) {
  long total = 0;
  while (total < cap) {
    ssize_t n = read(fd, buf + total, (size_t)(cap - total));
    if (n > 0) {
      total += n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && !total) return -errno;
    break;
  }
  return total;
}

/* Signals the init through its pidfd; SIGKILL there ends the whole pid namespace. */
int coop_kill(int pidfd, int sig) {
  return syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

int coop_close(int fd) { return close(fd) < 0 ? -errno : 0; }

/*
 * A pidfd for a process Coop did not start (`coop sandbox stop`: a live session's init, found by
 * pid in a file). Checked against the process's start time after it is open, it names that
 * process for good: a signal through it can't reach another that reused the pid meanwhile.
 */
int coop_pidfd_open(int pid) {
  int fd = (int)syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -errno : fd;
}
