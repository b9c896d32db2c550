/* The sandbox's filesystem: deny by default. A fresh tmpfs becomes the root; only what the
 * spec names is bound in (read-only), the workspace is bound read-write at /work, and /tmp,
 * /dev and /proc are new instances. The host root is reachable only as /oldroot while this
 * runs, and is detached before the command exists. */
#include "init.h"

#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/mount.h>

#include "../workspace.h"

#ifndef MNT_DETACH
#define MNT_DETACH 2 /* <sys/mount.h> is glibc's; this binary has no libc */
#endif

static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty", 0};
/* procfs entries that reach host-wide kernel state; read-only even where the kernel allows
 * writes from a user namespace (bubblewrap's set, and Docker's /proc/fs). */
static const char *const proc_readonly[] = {"/proc/sys", "/proc/sysrq-trigger", "/proc/irq",
                                            "/proc/bus", "/proc/fs", 0};
/* procfs entries that describe the host, not the sandbox: each is hidden behind an empty,
 * read-only file or directory (Docker's masked paths, plus cmdline, boot_id and kallsyms,
 * which it leaves). Without them: cmdline — the host kernel's command line; boot_id — the
 * host's boot, the same in every sandbox (an identifier across sandboxes); keys — the keys the
 * sandbox's host uid may view (an unprivileged invoker's own); kcore — kernel memory;
 * kallsyms — symbol addresses, zero without CAP_SYSLOG but real to everyone on a host with
 * kptr_restrict=0 and perf_event_paranoid<=1 (a KASLR bypass), and the names alone tell the
 * kernel build and modules (nothing in a sandbox needs it: perf_event_open is denied);
 * timer_list, sched_debug, latency_stats, interrupts — host-wide timers, tasks and interrupt
 * counts, side channels on other users' activity; acpi, scsi, asound — host hardware. A path
 * this kernel does not have is skipped. */
static const char *const proc_masked[] = {
    "/proc/cmdline",     "/proc/sys/kernel/random/boot_id", "/proc/keys",
    "/proc/kcore",       "/proc/kallsyms",                  "/proc/timer_list",
    "/proc/sched_debug", "/proc/latency_stats",             "/proc/interrupts",
    "/proc/acpi",        "/proc/scsi",                      "/proc/asound",
    0};
/* Where mask_proc makes its empty file and directory; gone before the command runs. */
#define MASK_FILE "/.coop-mask-file"
#define MASK_DIR "/.coop-mask-dir"

static void do_mount(int step, const char *src, const char *dst, const char *type,
                     unsigned long flags, const char *data) {
  coop_check(step, SYS5(__NR_mount, src, dst, type, flags, data));
}

/* Sets mount attributes without touching the others: a bind keeps the locked flags
 * (nosuid, nodev, …) it inherited from a more privileged namespace, which MS_REMOUNT would
 * have to restate exactly. */
static long set_attrs(const char *path, unsigned long attrs, int recursive) {
  struct mount_attr attr = {.attr_set = attrs};
  return SYS5(__NR_mount_setattr, AT_FDCWD, path, recursive ? AT_RECURSIVE : 0, &attr,
              sizeof attr);
}

static long make_dir(const char *path) {
  long r = SYS3(__NR_mkdirat, AT_FDCWD, path, 0755);
  return r == -EEXIST ? 0 : r;
}

/* mkdir -p, on paths the spec gives (absolute, inside the new root). */
static long make_dirs(const char *path) {
  char buf[COOP_PATH_MAX];
  long r = coop_join(buf, path, "");
  if (r) return r;
  for (char *p = buf + 1; *p; p++) {
    if (*p != '/') continue;
    *p = 0;
    r = make_dir(buf);
    *p = '/';
    if (r) return r;
  }
  return make_dir(buf);
}

static long make_parent_dirs(const char *path) {
  char buf[COOP_PATH_MAX];
  long r = coop_join(buf, path, "");
  if (r) return r;
  char *slash = 0;
  for (char *p = buf; *p; p++)
    if (*p == '/') slash = p;
  if (!slash || slash == buf) return 0;
  *slash = 0;
  return make_dirs(buf);
}

static long make_file(const char *path, const char *content) {
  long r = make_parent_dirs(path);
  if (r) return r;
  long fd = SYS4(__NR_openat, AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fd;
  unsigned long len = content ? coop_strlen(content) : 0, off = 0;
  while (off < len) {
    long n = SYS3(__NR_write, fd, content + off, len - off);
    if (n == -EINTR) continue;
    if (n < 0) {
      SYS1(__NR_close, fd);
      return n;
    }
    off += (unsigned long)n;
  }
  return SYS1(__NR_close, fd);
}

long coop_make_dirs(const char *path) { return make_dirs(path); }
long coop_make_file(const char *path, const char *content) { return make_file(path, content); }

/* Creates the mount point dst of the same kind (directory or file) as src. */
static long make_mount_point(const char *src, const char *dst) {
  long fd = SYS4(__NR_openat, AT_FDCWD, src, O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
  if (fd >= 0) {
    SYS1(__NR_close, fd);
    return make_dirs(dst);
  }
  if (fd != -ENOTDIR) return fd;
  return make_file(dst, 0);
}

/* Binds host path src (seen under /oldroot) at dst inside the new root. */
static void bind_host_path(int step, const char *src, const char *dst, unsigned long attrs) {
  char from[COOP_PATH_MAX];
  coop_check(step, coop_join(from, "/oldroot", src));
  coop_check(step, make_mount_point(from, dst));
  do_mount(step, from, dst, 0, MS_BIND | MS_REC, 0);
  coop_check(step, set_attrs(dst, attrs, 1));
}

/* The workspace at /work, attached by fd: the gateway's idmapped tree for root invokers,
 * else a tree cloned here from the host path (never a bind by path: ffi/workspace.h). */
static void mount_workspace(const struct coop_spec *spec) {
  const int step = COOP_STEP_MOUNT_WORKSPACE;
  long tree = spec->workspace_fd;
  if (tree < 0) {
    /* "/oldroot" is a plain directory of our tmpfs; every component after it is the host's. */
    char host[COOP_PATH_MAX];
    coop_check(step, coop_join(host, "/oldroot", spec->workspace));
    tree = coop_check(step, coop_workspace_tree(host));
    struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    coop_check(step, SYS5(__NR_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                          sizeof attr));
  }
  coop_check(step, make_dirs("/work"));
  coop_check(step, SYS5(__NR_move_mount, tree, "", AT_FDCWD, "/work", MOVE_MOUNT_F_EMPTY_PATH));
  SYS1(__NR_close, tree);
}

/* Workspace paths that the owner's own tools trust on the host — a repository's `.git`, whose
 * config (core.fsmonitor) and hooks run as the owner when the owner uses git there (ATTACKS
 * F5, F23) — are re-mounted read-only over themselves, by fd: opened beneath /work without
 * following any symlink, cloned, made read-only, and attached onto the very inode that was
 * opened. A mount point cannot be renamed or removed, so `mv .git .g` fails too. A path that is
 * gone is skipped (nothing left to protect); one that became a symlink fails closed (ELOOP). */
static void protect_paths(const struct coop_spec *spec) {
  const int step = COOP_STEP_PROTECT_PATHS;
  if (spec->protected_count == 0) return;
  struct open_how at_work = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC};
  long work = coop_check(step, SYS4(__NR_openat2, AT_FDCWD, "/work", &at_work, sizeof at_work));
  struct open_how beneath = {
      .flags = O_PATH | O_CLOEXEC,
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
  };
  struct mount_attr readonly = {
      .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
  };
  for (int i = 0; i < spec->protected_count; i++) {
    long target = SYS4(__NR_openat2, work, spec->protected_paths[i], &beneath, sizeof beneath);
    if (target == -ENOENT) continue;
    coop_check(step, target);
    long tree = coop_check(step, SYS3(__NR_open_tree, target, "",
                                      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
                                          AT_EMPTY_PATH));
    coop_check(step, SYS5(__NR_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &readonly,
                          sizeof readonly));
    coop_check(step, SYS5(__NR_move_mount, tree, "", target, "",
                          MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
    SYS1(__NR_close, tree);
    SYS1(__NR_close, target);
  }
  SYS1(__NR_close, work);
}

static void mount_tmpfs(int step, const char *dst, const char *mode, unsigned long size,
                        unsigned long flags) {
  char data[96], num[24];
  coop_ulong_to_str(size, num);
  coop_check(step, coop_join(data, "size=", num));
  coop_check(step, coop_join(data, data, ",mode="));
  coop_check(step, coop_join(data, data, mode));
  coop_check(step, make_dirs(dst));
  do_mount(step, "tmpfs", dst, "tmpfs", flags, data);
}

static void mount_dev(const struct coop_spec *spec) {
  coop_step(spec, COOP_STEP_MOUNT_DEV);
  mount_tmpfs(COOP_STEP_MOUNT_DEV, "/dev", "0755", 65536, MS_NOSUID | MS_NOEXEC);
  char host[COOP_PATH_MAX], inside[COOP_PATH_MAX];
  for (int i = 0; dev_nodes[i]; i++) {
    coop_check(COOP_STEP_MOUNT_DEV, coop_join(inside, "/dev/", dev_nodes[i]));
    coop_check(COOP_STEP_MOUNT_DEV, coop_join(host, "/oldroot", inside));
    coop_check(COOP_STEP_MOUNT_DEV, make_file(inside, 0));
    do_mount(COOP_STEP_MOUNT_DEV, host, inside, 0, MS_BIND, 0);
  }
  coop_check(COOP_STEP_MOUNT_DEV, make_dir("/dev/pts"));
  do_mount(COOP_STEP_MOUNT_DEV, "devpts", "/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
           "newinstance,ptmxmode=0666,mode=0620");
  coop_check(COOP_STEP_MOUNT_DEV, SYS3(__NR_symlinkat, "pts/ptmx", AT_FDCWD, "/dev/ptmx"));
  mount_tmpfs(COOP_STEP_MOUNT_DEV, "/dev/shm", "1777", spec->tmp_size,
              MS_NOSUID | MS_NODEV | MS_NOEXEC);
  static const char *const links[][2] = {{"/proc/self/fd", "/dev/fd"},
                                         {"/proc/self/fd/0", "/dev/stdin"},
                                         {"/proc/self/fd/1", "/dev/stdout"},
                                         {"/proc/self/fd/2", "/dev/stderr"}};
  for (unsigned i = 0; i < sizeof links / sizeof links[0]; i++)
    coop_check(COOP_STEP_MOUNT_DEV, SYS3(__NR_symlinkat, links[i][0], AT_FDCWD, links[i][1]));
  coop_check(COOP_STEP_MOUNT_DEV, set_attrs("/dev", MOUNT_ATTR_RDONLY, 0));
}

static void mount_proc(const struct coop_spec *spec) {
  coop_step(spec, COOP_STEP_MOUNT_PROC);
  coop_check(COOP_STEP_MOUNT_PROC, make_dir("/proc"));
  do_mount(COOP_STEP_MOUNT_PROC, "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, 0);
  for (int i = 0; proc_readonly[i]; i++) {
    long r = SYS5(__NR_mount, proc_readonly[i], proc_readonly[i], 0, MS_BIND | MS_REC, 0);
    if (r == -ENOENT) continue;
    coop_check(COOP_STEP_MOUNT_PROC, r);
    coop_check(COOP_STEP_MOUNT_PROC, set_attrs(proc_readonly[i], MOUNT_ATTR_RDONLY, 1));
  }
}

/* Binds an empty file or directory over each path of proc_masked, read-only: reading a masked
 * path yields nothing, writing fails (EROFS; Landlock denies writes under /proc too). The
 * sources are made on the root tmpfs (nosuid, nodev) and unlinked once bound — a bind keeps its
 * source alive. Not a tmpfs of their own: detaching it waits for an RCU grace period, measured
 * at ~2 ms here, against ~25 us per path for a bind and its mount_setattr. */
static void mask_proc(const struct coop_spec *spec) {
  const int step = COOP_STEP_MASK_PROC;
  coop_step(spec, COOP_STEP_MASK_PROC);
  coop_check(step, SYS3(__NR_mkdirat, AT_FDCWD, MASK_DIR, 0555));
  long fd = coop_check(step, SYS4(__NR_openat, AT_FDCWD, MASK_FILE,
                                  O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
  SYS1(__NR_close, fd);
  for (int i = 0; proc_masked[i]; i++) {
    long target =
        SYS4(__NR_openat, AT_FDCWD, proc_masked[i], O_PATH | O_DIRECTORY | O_CLOEXEC, 0);
    if (target == -ENOENT) continue;
    if (target >= 0) SYS1(__NR_close, target);
    else if (target != -ENOTDIR) coop_fail(step, -target);
    do_mount(step, target >= 0 ? MASK_DIR : MASK_FILE, proc_masked[i], 0, MS_BIND, 0);
    coop_check(step, set_attrs(proc_masked[i], MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC, 0));
  }
  coop_check(step, SYS3(__NR_unlinkat, AT_FDCWD, MASK_FILE, 0));
  coop_check(step, SYS3(__NR_unlinkat, AT_FDCWD, MASK_DIR, AT_REMOVEDIR));
}

void coop_build_root(const struct coop_spec *spec) {
  const unsigned long ro = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;

  /* Nothing we mount may propagate back to the host's namespace. */
  coop_step(spec, COOP_STEP_MOUNT_PRIVATE);
  do_mount(COOP_STEP_MOUNT_PRIVATE, 0, "/", 0, MS_REC | MS_PRIVATE, 0);

  /* The new root is a tmpfs mounted on the host's /tmp; pivot_root moves that mount to "/",
   * so /oldroot/tmp is the host's /tmp again afterwards (workspaces often live there). */
  coop_step(spec, COOP_STEP_MOUNT_ROOT);
  do_mount(COOP_STEP_MOUNT_ROOT, "tmpfs", "/tmp", "tmpfs", MS_NOSUID | MS_NODEV,
           "mode=0755,size=4m,nr_inodes=4096");
  coop_check(COOP_STEP_MOUNT_ROOT, SYS1(__NR_chdir, "/tmp"));
  coop_check(COOP_STEP_MOUNT_ROOT, make_dir("oldroot"));

  coop_step(spec, COOP_STEP_PIVOT_ROOT);
  coop_check(COOP_STEP_PIVOT_ROOT, SYS2(__NR_pivot_root, ".", "oldroot"));
  coop_check(COOP_STEP_PIVOT_ROOT, SYS1(__NR_chdir, "/"));

  coop_step(spec, COOP_STEP_BIND_READONLY);
  for (int i = 0; i < spec->ro_bind_count; i++)
    bind_host_path(COOP_STEP_BIND_READONLY, spec->ro_binds[i].a, spec->ro_binds[i].b, ro);

  coop_mount_root_layers(spec);

  coop_step(spec, COOP_STEP_MOUNT_WORKSPACE);
  mount_workspace(spec);

  coop_step(spec, COOP_STEP_PROTECT_PATHS);
  protect_paths(spec);

  coop_step(spec, COOP_STEP_MOUNT_TMP);
  mount_tmpfs(COOP_STEP_MOUNT_TMP, "/tmp", "1777", spec->tmp_size, MS_NOSUID | MS_NODEV);

  mount_dev(spec);
  mount_proc(spec);
  mask_proc(spec);

  coop_step(spec, COOP_STEP_WRITE_ETC);
  for (int i = 0; i < spec->dir_count; i++)
    coop_check(COOP_STEP_WRITE_ETC, make_dirs(spec->dirs[i]));
  if (coop_image_root(spec)) coop_stage_files(spec);
  else
    for (int i = 0; i < spec->file_count; i++)
      coop_check(COOP_STEP_WRITE_ETC, make_file(spec->files[i].a, spec->files[i].b));

  coop_step(spec, COOP_STEP_SYMLINKS);
  for (int i = 0; i < spec->symlink_count; i++) {
    coop_check(COOP_STEP_SYMLINKS, make_parent_dirs(spec->symlinks[i].b));
    coop_check(COOP_STEP_SYMLINKS,
               SYS3(__NR_symlinkat, spec->symlinks[i].a, AT_FDCWD, spec->symlinks[i].b));
  }

  coop_step(spec, COOP_STEP_UMOUNT_OLDROOT);
  coop_check(COOP_STEP_UMOUNT_OLDROOT, SYS2(__NR_umount2, "/oldroot", MNT_DETACH));
  coop_check(COOP_STEP_UMOUNT_OLDROOT, SYS3(__NR_unlinkat, AT_FDCWD, "/oldroot", AT_REMOVEDIR));

  coop_finish_root_layers(spec);

  coop_step(spec, COOP_STEP_REMOUNT_ROOT_READONLY);
  coop_check(COOP_STEP_REMOUNT_ROOT_READONLY, set_attrs("/", ro, 0));
}
