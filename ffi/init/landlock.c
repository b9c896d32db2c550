/* Landlock: the second wall around the filesystem, TCP and IPC scopes.
 *
 * The mounts already decide what exists; Landlock decides what may be done with it, and keeps
 * deciding if a mount is ever wrong (a bind left writable, a procfs knob that a user namespace
 * may write). Everything under "/" is read/execute; /work and /tmp are read-write; /dev/shm is
 * read-write without execute (it is mounted noexec too); the few device nodes are read-write.
 * Rights the running kernel doesn't know are dropped, so one binary works on every ABI.
 *
 * Called after coop_drop_privileges() (landlock_restrict_self needs no_new_privs) and before
 * seccomp. Returns the ABI in force, or 0 when the kernel has no Landlock. */
#include "init.h"

#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/landlock.h>

/* The build host's uapi headers may predate the kernel the sandbox runs on: everything after
 * ABI 2 is spelled out here with the kernel's values. */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#define __NR_landlock_add_rule 445
#define __NR_landlock_restrict_self 446
#endif
#define COOP_LL_FS_TRUNCATE (1ULL << 14)  /* ABI 3 */
#define COOP_LL_FS_IOCTL_DEV (1ULL << 15) /* ABI 5 */
#define COOP_LL_NET_BIND_TCP (1ULL << 0)  /* ABI 4 */
#define COOP_LL_NET_CONNECT_TCP (1ULL << 1)
#define COOP_LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0) /* ABI 6 */
#define COOP_LL_SCOPE_SIGNAL (1ULL << 1)

/* struct landlock_ruleset_attr as of ABI 6. The kernel accepts a larger struct than it knows
 * as long as the unknown tail is zero, so older kernels get the same layout with 0 there. */
struct coop_ruleset_attr {
  __u64 handled_access_fs;
  __u64 handled_access_net;
  __u64 scoped;
};

#define FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_EXEC LANDLOCK_ACCESS_FS_EXECUTE
/* Creating device nodes is never granted: the mounts are nodev and CAP_MKNOD is gone, this
 * is the third no. Fifos and sockets are ordinary tools (mkfifo, tmux, ssh-agent). */
#define FS_WRITE                                                                          \
  (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                        \
   LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR |                         \
   LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |                           \
   LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | LANDLOCK_ACCESS_FS_REFER | \
   COOP_LL_FS_TRUNCATE)
/* Rights that may be granted on a non-directory (the kernel refuses the others there).
 * TRUNCATE because shells open "> /dev/null" with O_TRUNC; IOCTL_DEV for isatty()/stty on
 * the pty and tty. */
#define FS_DEVICE                                                                          \
  (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | COOP_LL_FS_TRUNCATE |    \
   COOP_LL_FS_IOCTL_DEV)

struct coop_landlock_rule {
  const char *path;
  __u64 access;
};

/* Order doesn't matter to Landlock (rules on nested paths add up); this is the policy as a
 * table. A path missing from the root is skipped, not fatal: the mounts decided it. */
static const struct coop_landlock_rule rules[] = {
    {"/", FS_READ | FS_EXEC},
    /* Execute is allowed where the command may write: agents build and run their own
     * binaries and virtualenvs in /work, and a copy of /bin/sh in /tmp can do nothing
     * /bin/sh can't (nosuid, no capabilities, same filters). */
    {"/work", FS_READ | FS_EXEC | FS_WRITE},
    {"/tmp", FS_READ | FS_EXEC | FS_WRITE},
    {"/dev/shm", FS_READ | FS_WRITE},
    {"/dev/null", FS_DEVICE},
    {"/dev/zero", FS_DEVICE},
    {"/dev/full", FS_DEVICE},
    {"/dev/random", FS_DEVICE},
    {"/dev/urandom", FS_DEVICE},
    {"/dev/tty", FS_DEVICE},
    /* /dev/ptmx is a symlink to pts/ptmx; this one rule covers both and every pty. */
    {"/dev/pts", FS_DEVICE | LANDLOCK_ACCESS_FS_READ_DIR},
};

static __u64 fs_rights(long abi) {
  __u64 all = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
  if (abi >= 2) all |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) all |= COOP_LL_FS_TRUNCATE;
  if (abi >= 5) all |= COOP_LL_FS_IOCTL_DEV;
  return all;
}

static void add_path_rule(long ruleset, const char *path, __u64 access) {
  long fd = SYS4(__NR_openat, AT_FDCWD, path, O_PATH | O_CLOEXEC, 0);
  if (fd == -ENOENT) return;
  coop_check(COOP_STEP_LANDLOCK, fd);
  struct landlock_path_beneath_attr attr = {.allowed_access = access, .parent_fd = (__s32)fd};
  long r = SYS4(__NR_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &attr, 0);
  /* Closed at once: an fd opened before restrict_self would keep its rights afterwards. */
  SYS1(__NR_close, fd);
  coop_check(COOP_STEP_LANDLOCK, r);
}

int coop_apply_landlock(const struct coop_spec *spec) {
  const int step = COOP_STEP_LANDLOCK;
  long abi = SYS3(__NR_landlock_create_ruleset, 0, 0, LANDLOCK_CREATE_RULESET_VERSION);
  /* ENOSYS: not built in; EOPNOTSUPP: built but not enabled at boot (lsm=). The sandbox
   * still runs, and READY says 0 so status shows the layer as missing. */
  if (abi == -ENOSYS || abi == -EOPNOTSUPP) return 0;
  coop_check(step, abi);

  struct coop_ruleset_attr attr = {0};
  attr.handled_access_fs = fs_rights(abi);
  /* With the host's network, TCP is left alone; in an own netns every bind is refused
   * (EACCES), and with network "none" every connect too, loopback included. With "proxy" and
   * "public" every connect ends at the init's capture listener or its proxy forwarder
   * (capture.c), so connect is left to them: Landlock can only filter by port, and any port
   * of any address is now a question for the policy proxy. */
  int proxied = coop_streq(spec->net, "proxy") || coop_streq(spec->net, "public");
  if (abi >= 4 && !coop_streq(spec->net, "host"))
    attr.handled_access_net = COOP_LL_NET_BIND_TCP | (proxied ? 0 : COOP_LL_NET_CONNECT_TCP);
  /* Scoped to this domain: abstract unix sockets and signals of processes outside it (the
   * host's, the gateway's) are unreachable even if a namespace is ever shared. */
  if (abi >= 6) attr.scoped = COOP_LL_SCOPE_ABSTRACT_UNIX_SOCKET | COOP_LL_SCOPE_SIGNAL;

  long ruleset = coop_check(step, SYS3(__NR_landlock_create_ruleset, &attr, sizeof attr, 0));
  for (unsigned i = 0; i < sizeof rules / sizeof rules[0]; i++)
    add_path_rule(ruleset, rules[i].path, rules[i].access & attr.handled_access_fs);
  /* An environment's root: the image's top-level directories, /usr over the host's, the
   * persist directories (ffi/init/rootfs.c). Never "/" itself: /proc and /dev stay as above. */
  for (int i = 0; coop_writable_path(i); i++)
    add_path_rule(ruleset, coop_writable_path(i),
                  (FS_READ | FS_EXEC | FS_WRITE) & attr.handled_access_fs);
  /* No flags: the init is single-threaded here (it forks the command only afterwards), so
   * the domain covers every task of the sandbox without ABI 8's TSYNC. */
  coop_check(step, SYS2(__NR_landlock_restrict_self, ruleset, 0));
  SYS1(__NR_close, ruleset);
  return (int)abi;
}
