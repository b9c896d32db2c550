/* seccomp-BPF: the last layer, installed after Landlock, just before the command is forked.
 *
 * A denylist that is complete for the sandbox's threat model (docs/security.md explains the
 * choice and every group): the calls that reach kernel state the namespaces don't isolate,
 * that would undo the other layers (new namespaces, mounts, chroot), that touch other
 * processes, or that are mostly attack surface (bpf, perf, userfaultfd, io_uring); and every
 * mode with a set-id bit, which would plant a set-id file on the host; and memfds where the
 * memory limit is only each address space (the rlimit path). Calls newer
 * than the review get ENOSYS; everything else is allowed, and the kernel's seccomp cache then
 * skips the filter for every syscall whose verdict doesn't depend on arguments.
 *
 * Needs no_new_privs (set by coop_drop_privileges()). Returns 1: installed; failures are
 * fatal. */
#include "init.h"

#include <asm/ioctls.h>
#include <linux/audit.h>
#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/filter.h>
#include <linux/sched.h>
#include <linux/seccomp.h>

#if defined(__x86_64__)
#define COOP_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define COOP_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* Calls newer than the build host's uapi headers. Since 5.1 new syscalls share one number
 * on every architecture, so these hold for x86_64 and aarch64 alike. */
#ifndef __NR_quotactl_fd
#define __NR_quotactl_fd 443
#endif
#ifndef __NR_openat2
#define __NR_openat2 437
#endif
#ifndef __NR_fchmodat2
#define __NR_fchmodat2 452
#endif
#ifndef __NR_memfd_secret
#define __NR_memfd_secret 447
#endif
#ifndef __NR_lsm_set_self_attr
#define __NR_lsm_set_self_attr 460
#endif
#ifndef __NR_open_tree_attr
#define __NR_open_tree_attr 467
#endif

/* The highest syscall number reviewed for this list (file_setattr, Linux 6.17; 6.18 added
 * none in the shared table). Calls added later are answered ENOSYS until someone reviews them
 * and moves this line: that keeps the denylist complete on kernels newer than its review, and
 * ENOSYS is what libc already treats as "not supported here, fall back". */
#define COOP_LAST_REVIEWED_NR 469

#define COOP_AF_UNIX 1
#define COOP_AF_INET 2
#define COOP_AF_INET6 10
#define COOP_AF_NETLINK 16

/* S_ISUID | S_ISGID. The kernel reads a mode as umode_t (16 bits) and keeps these bits of it,
 * so testing them in the low word is exactly the kernel's view of the mode. */
#define COOP_SETID_BITS 06000
/* The open flags under which the kernel uses the mode argument at all (its WILL_CREATE). */
#define COOP_OPEN_CREATES (O_CREAT | __O_TMPFILE)

#define COOP_CLONE_NEW_MASK                                                          \
  (CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER |     \
   CLONE_NEWPID | CLONE_NEWNET)

#define ALLOW SECCOMP_RET_ALLOW
#define DENY(e) (SECCOMP_RET_ERRNO | ((e) & SECCOMP_RET_DATA))

/* Argument words are read as their low 32 bits: the kernel declares flags, families,
 * personalities and ioctl requests as int, so the high half is ignored by the call and must
 * be ignored by the filter too (or 0x100005412 would slip past a 64-bit compare). Both
 * architectures are little-endian. */
#define ARG_LO(i) (__builtin_offsetof(struct seccomp_data, args) + 8 * (i))
#define NR_OFF __builtin_offsetof(struct seccomp_data, nr)
#define ARCH_OFF __builtin_offsetof(struct seccomp_data, arch)

struct coop_denial {
  int nr;
  int err;
};

/* Denied outright with EPERM (clone3 with ENOSYS). The groups are those of docs/security.md. */
static const struct coop_denial denied[] = {
    /* Namespaces: a new user namespace brings a full capability set and, with it, mounts
     * and every namespaced-root kernel path. clone3 hides its flags in memory, beyond
     * seccomp's reach: ENOSYS makes libc fall back to clone, whose flags are checked. */
    {__NR_unshare, EPERM},
    {__NR_setns, EPERM},
    {__NR_clone3, ENOSYS},
    /* openat2 carries its mode in a struct open_how in memory, out of seccomp's reach, so the
     * set-id rule below could not see it (nor could a rule on its flags). ENOSYS is what a
     * pre-5.6 kernel answers: libc does not use openat2 for open(), and the programs that do
     * (path-safe resolvers) fall back to openat, whose flags and mode are checked. */
    {__NR_openat2, ENOSYS},
    /* Mounts and the root. */
    {__NR_mount, EPERM},
    {__NR_umount2, EPERM},
#ifdef __NR_umount
    {__NR_umount, EPERM},
#endif
    {__NR_pivot_root, EPERM},
    {__NR_chroot, EPERM},
    {__NR_fsopen, EPERM},
    {__NR_fsconfig, EPERM},
    {__NR_fsmount, EPERM},
    {__NR_fspick, EPERM},
    {__NR_move_mount, EPERM},
    {__NR_open_tree, EPERM},
    {__NR_open_tree_attr, EPERM},
    {__NR_mount_setattr, EPERM},
    /* Other processes' memory, files and state. */
    {__NR_ptrace, EPERM},
    {__NR_process_vm_readv, EPERM},
    {__NR_process_vm_writev, EPERM},
    {__NR_process_madvise, EPERM},
    {__NR_kcmp, EPERM},
    {__NR_pidfd_getfd, EPERM},
    /* Kernel keyrings: not namespaced, shared with the host user. */
    {__NR_keyctl, EPERM},
    {__NR_add_key, EPERM},
    {__NR_request_key, EPERM},
    /* The kernel itself and machine-wide state. */
    {__NR_init_module, EPERM},
    {__NR_finit_module, EPERM},
    {__NR_delete_module, EPERM},
    {__NR_kexec_load, EPERM},
#ifdef __NR_kexec_file_load
    {__NR_kexec_file_load, EPERM},
#endif
    {__NR_reboot, EPERM},
    {__NR_swapon, EPERM},
    {__NR_swapoff, EPERM},
    {__NR_acct, EPERM},
    {__NR_quotactl, EPERM},
    {__NR_quotactl_fd, EPERM},
    {__NR_syslog, EPERM},
    {__NR_vhangup, EPERM},
    {__NR_lookup_dcookie, EPERM},
    {__NR_lsm_set_self_attr, EPERM},
#ifdef __NR_iopl
    {__NR_iopl, EPERM},
#endif
#ifdef __NR_ioperm
    {__NR_ioperm, EPERM},
#endif
#ifdef __NR_modify_ldt
    {__NR_modify_ldt, EPERM},
#endif
    /* Obsolete calls nobody needs, some still reachable. */
#ifdef __NR_nfsservctl
    {__NR_nfsservctl, EPERM},
#endif
#ifdef __NR_uselib
    {__NR_uselib, EPERM},
#endif
#ifdef __NR_ustat
    {__NR_ustat, EPERM},
#endif
#ifdef __NR_sysfs
    {__NR_sysfs, EPERM},
#endif
#ifdef __NR__sysctl
    {__NR__sysctl, EPERM},
#endif
    /* The clock is not namespaced (time namespaces only offset monotonic/boottime). */
    {__NR_settimeofday, EPERM},
    {__NR_clock_settime, EPERM},
    {__NR_clock_adjtime, EPERM},
    {__NR_adjtimex, EPERM},
#ifdef __NR_stime
    {__NR_stime, EPERM},
#endif
    /* Attack surface: interfaces that mostly serve exploits here. io_uring also performs
     * socket(), openat() and friends without passing through this filter. */
    {__NR_bpf, EPERM},
    {__NR_perf_event_open, EPERM},
    {__NR_userfaultfd, EPERM},
    {__NR_io_uring_setup, EPERM},
    {__NR_io_uring_enter, EPERM},
    {__NR_io_uring_register, EPERM},
    {__NR_fanotify_init, EPERM},
    {__NR_open_by_handle_at, EPERM},
    {__NR_name_to_handle_at, EPERM},
};

static struct sock_filter prog[512]; /* ~280 used on x86_64; the kernel takes 4096 */
static unsigned short len;

static void emit(struct sock_filter insn) {
  if (len >= sizeof prog / sizeof prog[0]) coop_fail(COOP_STEP_SECCOMP, E2BIG);
  prog[len++] = insn;
}

#define STMT(code, k) emit((struct sock_filter)BPF_STMT((code), (k)))
#define JUMP(code, k, jt, jf) emit((struct sock_filter)BPF_JUMP((code), (k), (jt), (jf)))

/* if (nr == call) return (low32(arg) is one of ok[]) ? ALLOW : DENY(EPERM); A keeps nr
 * otherwise. Each block returns for its own call, so nothing after it needs nr reloaded. */
static void allow_only(int call, int arg, const __u32 *ok, unsigned n) {
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)call, 0, (unsigned char)(n + 3));
  STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg));
  for (unsigned i = 0; i < n; i++)
    JUMP(BPF_JMP | BPF_JEQ | BPF_K, ok[i], (unsigned char)(n - i), 0);
  STMT(BPF_RET | BPF_K, DENY(EPERM));
  STMT(BPF_RET | BPF_K, ALLOW);
}

/* The same with a list of refused values. */
static void deny_values(int call, int arg, const __u32 *bad, unsigned n) {
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)call, 0, (unsigned char)(n + 3));
  STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg));
  for (unsigned i = 0; i < n; i++)
    JUMP(BPF_JMP | BPF_JEQ | BPF_K, bad[i], (unsigned char)(n - i), 0);
  STMT(BPF_RET | BPF_K, ALLOW);
  STMT(BPF_RET | BPF_K, DENY(EPERM));
}

/* The same with a mask of refused flag bits. */
static void deny_flags(int call, int arg, __u32 mask) {
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)call, 0, 4);
  STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(arg));
  JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 1, 0);
  STMT(BPF_RET | BPF_K, ALLOW);
  STMT(BPF_RET | BPF_K, DENY(EPERM));
}

/* open(2)/openat(2): if (nr == call && low32(flags) & COOP_OPEN_CREATES) the mode (the next
 * argument) is judged like deny_flags(); without those flags the kernel ignores the mode. */
static void deny_creating_mode(int call, int flags_arg, __u32 mask) {
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)call, 0, 6);
  STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(flags_arg));
  JUMP(BPF_JMP | BPF_JSET | BPF_K, COOP_OPEN_CREATES, 0, 2);
  STMT(BPF_LD | BPF_W | BPF_ABS, ARG_LO(flags_arg + 1));
  JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 1, 0);
  STMT(BPF_RET | BPF_K, ALLOW);
  STMT(BPF_RET | BPF_K, DENY(EPERM));
}

/* The calls whose verdict depends on an argument. */
enum {
  RULE_DENY,
  RULE_CLONE,
  RULE_IOCTL,
  RULE_SOCKET,
  RULE_PERSONALITY,
  RULE_SETID_MODE,
  RULE_SETID_OPEN
};

/* One call the filter does not simply allow: its number, how it is judged, the errno of a
 * RULE_DENY, the argument a RULE_SETID_* reads (the mode; for RULE_SETID_OPEN the flags, with
 * the mode after them). */
struct coop_rule {
  int nr;
  int kind;
  int err;
  int arg;
};

static void emit_rule(const struct coop_rule *rule) {
  /* clone(2): a plain fork, vfork or thread passes; any CLONE_NEW* flag is refused. The
   * flags are argument 0 on both architectures. */
  if (rule->kind == RULE_CLONE) deny_flags(rule->nr, 0, COOP_CLONE_NEW_MASK);
  /* TIOCSTI pushes input into a terminal's queue (CVE-2017-5226), TIOCLINUX reaches the
   * virtual console, TIOCSETD loads line disciplines (CVE-2017-2636). */
  static const __u32 tty_ioctls[] = {TIOCSTI, TIOCLINUX, TIOCSETD};
  if (rule->kind == RULE_IOCTL) deny_values(rule->nr, 1, tty_ioctls, 3);
  /* Address families: the ones programs need (netlink is how glibc's getaddrinfo and `ip`
   * list interfaces; without capabilities it can only read this netns). The other ~40,
   * vsock and AF_ALG among them, are mostly old unprivileged-reachable kernel code. This
   * holds for socket and socketpair alike. */
  static const __u32 families[] = {COOP_AF_UNIX, COOP_AF_INET, COOP_AF_INET6, COOP_AF_NETLINK};
  if (rule->kind == RULE_SOCKET) allow_only(rule->nr, 0, families, 4);
  /* ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC and friends weaken the command's own children;
   * only the default persona and the query are allowed. */
  static const __u32 personas[] = {0 /* PER_LINUX */, 0xffffffffU /* query */};
  if (rule->kind == RULE_PERSONALITY) allow_only(rule->nr, 0, personas, 2);
  /* No set-id bit, ever: the workspace is mounted nosuid inside, but its files are host files.
   * As root it is an idmapped mount whose files belong to host root, so a set-uid copy of a
   * shell made here would be a root shell for any local user of the host; unprivileged, it
   * would hand out the invoker's uid. Every call that sets a mode is checked: the chmod
   * family, and the calls that create a file, directory or node with a mode. */
  if (rule->kind == RULE_SETID_MODE) deny_flags(rule->nr, rule->arg, COOP_SETID_BITS);
  if (rule->kind == RULE_SETID_OPEN) deny_creating_mode(rule->nr, rule->arg, COOP_SETID_BITS);
  if (rule->kind == RULE_DENY) {
    JUMP(BPF_JMP | BPF_JEQ | BPF_K, (__u32)rule->nr, 0, 1);
    STMT(BPF_RET | BPF_K, DENY(rule->err));
  }
}

/* The calls that set a mode, with the argument that holds it (RULE_SETID_OPEN: the flags,
 * the mode after them). aarch64 has only the *at forms. */
static const struct coop_rule setid_rules[] = {
#ifdef __NR_chmod
    {__NR_chmod, RULE_SETID_MODE, 0, 1},
#endif
    {__NR_fchmod, RULE_SETID_MODE, 0, 1},
    {__NR_fchmodat, RULE_SETID_MODE, 0, 2},
    {__NR_fchmodat2, RULE_SETID_MODE, 0, 2},
#ifdef __NR_creat
    {__NR_creat, RULE_SETID_MODE, 0, 1},
#endif
#ifdef __NR_mkdir
    {__NR_mkdir, RULE_SETID_MODE, 0, 1},
#endif
    {__NR_mkdirat, RULE_SETID_MODE, 0, 2},
#ifdef __NR_mknod
    {__NR_mknod, RULE_SETID_MODE, 0, 1},
#endif
    {__NR_mknodat, RULE_SETID_MODE, 0, 2},
#ifdef __NR_open
    {__NR_open, RULE_SETID_OPEN, 0, 1},
#endif
    {__NR_openat, RULE_SETID_OPEN, 0, 2},
};

#define COOP_COUNT(a) (sizeof(a) / sizeof(a)[0])
/* On the rlimit path the memory limit is each process's address space (RLIMIT_AS), and a
 * memfd's pages belong to none: written with write() or mapped a piece at a time, one memfd
 * holds up to RLIMIT_FSIZE, and the number of them is bounded only by open files across
 * processes (ATTACKS R13; a cgroup counts them, so the other paths allow them). ENOSYS is what
 * kernels before 3.17 (memfd_create) or without secretmem (memfd_secret) answer, and callers
 * fall back to shm_open or a temporary file: /dev/shm and /tmp, tmpfs with a size. */
static const struct coop_rule memfd_rules[] = {
    {__NR_memfd_create, RULE_DENY, ENOSYS, 0},
    {__NR_memfd_secret, RULE_DENY, ENOSYS, 0},
};

#define COOP_MAX_RULES (COOP_COUNT(denied) + COOP_COUNT(setid_rules) + COOP_COUNT(memfd_rules) + 5)
#define COOP_LEAF_RULES 4

/* Every rule, sorted by syscall number. Fails closed on a number listed twice: the search
 * below would find only one of its rules. */
static unsigned collect_rules(const struct coop_spec *spec, struct coop_rule *rules) {
  unsigned n = 0;
  rules[n++] = (struct coop_rule){__NR_clone, RULE_CLONE, 0, 0};
  rules[n++] = (struct coop_rule){__NR_ioctl, RULE_IOCTL, 0, 0};
  rules[n++] = (struct coop_rule){__NR_socket, RULE_SOCKET, 0, 0};
  rules[n++] = (struct coop_rule){__NR_socketpair, RULE_SOCKET, 0, 0};
  rules[n++] = (struct coop_rule){__NR_personality, RULE_PERSONALITY, 0, 0};
  for (unsigned i = 0; i < COOP_COUNT(setid_rules); i++)
    rules[n++] = setid_rules[i];
  if (coop_address_space_limit(spec))
    for (unsigned i = 0; i < COOP_COUNT(memfd_rules); i++)
      rules[n++] = memfd_rules[i];
  for (unsigned i = 0; i < COOP_COUNT(denied); i++)
    rules[n++] = (struct coop_rule){denied[i].nr, RULE_DENY, denied[i].err, 0};
  for (unsigned i = 1; i < n; i++) /* insertion sort: ~80 entries, once per sandbox */
    for (unsigned j = i; j > 0 && rules[j - 1].nr > rules[j].nr; j--) {
      struct coop_rule t = rules[j];
      rules[j] = rules[j - 1], rules[j - 1] = t;
    }
  for (unsigned i = 1; i < n; i++)
    if (rules[i - 1].nr == rules[i].nr) coop_fail(COOP_STEP_SECCOMP, EINVAL);
  return n;
}

/* A binary search over the sorted rules, with A holding nr: a few comparisons per call
 * instead of one per rule. That matters at install time, when the kernel's seccomp cache
 * runs the filter once for every syscall number (~0.1 ms for a linear list of ~70 rules),
 * and for the argument-checked calls, which run it every time. A leaf checks its few rules
 * one by one and allows everything else. */
static void emit_search(const struct coop_rule *rules, unsigned n) {
  if (n <= COOP_LEAF_RULES) {
    for (unsigned i = 0; i < n; i++) emit_rule(&rules[i]);
    STMT(BPF_RET | BPF_K, ALLOW);
    return;
  }
  unsigned mid = n / 2, at = len;
  JUMP(BPF_JMP | BPF_JGE | BPF_K, (__u32)rules[mid].nr, 0, 0); /* jt: set once known */
  emit_search(rules, mid);
  unsigned skip = (unsigned)len - at - 1; /* over the lower half, to the upper one */
  if (skip > 255) coop_fail(COOP_STEP_SECCOMP, E2BIG); /* a jump offset is 8 bits */
  prog[at].jt = (unsigned char)skip;
  emit_search(rules + mid, n - mid);
}

int coop_install_seccomp(const struct coop_spec *spec) {
  /* Syscall numbers mean different calls under another ABI (i386 via int 0x80, arm32
   * compat): a filter written for the native table would be bypassed. Kill first. */
  STMT(BPF_LD | BPF_W | BPF_ABS, ARCH_OFF);
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, COOP_AUDIT_ARCH, 1, 0);
  STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
  STMT(BPF_LD | BPF_W | BPF_ABS, NR_OFF);
#if defined(__x86_64__)
  /* x32 shares AUDIT_ARCH_X86_64 and marks its numbers with bit 30 (x32's unshare is
   * 0x40000110, not 272). Nothing here is x32. nr -1 is let through: it is what a skipped
   * syscall looks like and the kernel answers ENOSYS itself. */
  JUMP(BPF_JMP | BPF_JGE | BPF_K, __X32_SYSCALL_BIT, 0, 2);
  JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffffU, 1, 0);
  STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS);
#endif
  JUMP(BPF_JMP | BPF_JGT | BPF_K, COOP_LAST_REVIEWED_NR, 0, 1);
  STMT(BPF_RET | BPF_K, DENY(ENOSYS));

  struct coop_rule rules[COOP_MAX_RULES];
  emit_search(rules, collect_rules(spec, rules));

  struct sock_fprog fprog = {len, prog};
  /* The init is single-threaded (the command is forked after this), so TSYNC has nothing to
   * synchronize; it is passed so that a thread added here one day gets the filter too, or
   * setup fails, instead of one thread staying unfiltered. */
  long r = SYS3(__NR_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog);
  if (r > 0) coop_fail(COOP_STEP_SECCOMP, EBUSY); /* the id of a thread TSYNC couldn't sync */
  coop_check(COOP_STEP_SECCOMP, r);
  return 1;
}
