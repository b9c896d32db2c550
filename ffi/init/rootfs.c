/* Environment roots (issue 14, docs/environments_overlay.md): a base image with the user's own
 * upper layer above it (overlayfs), or a host directory, as the sandbox's root; persist binds.
 *
 * The sandbox's "/" stays the read-only tmpfs of mounts.c. The image's top-level directories
 * are bound onto it read-write, one by one, by fd (openat2 without following symlinks, then
 * open_tree and move_mount), so /work, /tmp, /dev and /proc remain the sandbox's own and a
 * symlink the user planted in the upper can't redirect a mount while the host is still
 * reachable at /oldroot. Whatever must land inside the image itself — the synthesized /etc
 * files, bound over the image's own, and the persist directories — is attached only after
 * /oldroot is detached: a symlink in the upper then resolves within the sandbox's view.
 *
 * Overlay in a user namespace: "userxattr" (user.overlay.* instead of trusted.overlay.*, which
 * a user namespace can't set: without it opaque directories can't be marked and a directory
 * removed and made again shows the lower's entries again), and redirect_dir, metacopy and
 * index left off (redirect_dir=on and metacopy=on are refused with userxattr, EINVAL; index=on
 * would tie the upper to one lower's file handles). Stated explicitly so that a kernel built
 * with other defaults can't change them. */
#include "init.h"

#include <linux/errno.h>
#include <linux/fcntl.h>
#include <linux/mount.h>

#include "../workspace.h"

#define STAGING "/.coop-root"
#define STAGED_FILES "/.coop-files"

long coop_make_dirs(const char *path);
long coop_make_file(const char *path, const char *content);

/* Top-level names of an image that are the sandbox's own, never the image's. */
static const char *const own_names[] = {".", "..", "work", "tmp", "dev", "proc", "sys", "run",
                                        "oldroot", ".coop-root", ".coop-files", 0};

static char writable[COOP_MAX_ENTRIES][COOP_PATH_MAX / 16];
static int writable_count;
static int persist_trees[COOP_MAX_ENTRIES];

const char *coop_writable_path(int i) { return i < writable_count ? writable[i] : 0; }

static void add_writable(int step, const char *path) {
  if (writable_count >= COOP_MAX_ENTRIES) coop_fail(step, E2BIG);
  unsigned long len = 0;
  writable[writable_count][0] = 0;
  coop_append(writable[writable_count], &len, sizeof writable[0], path);
  if (len >= sizeof writable[0] - 1) coop_fail(step, ENAMETOOLONG);
  writable_count++;
}

int coop_image_root(const struct coop_spec *spec) {
  if (spec->dir_root) return 1;
  for (int i = 0; i < spec->overlay_count; i++)
    if (coop_streq(spec->overlays[i].target, "/")) return 1;
  return 0;
}

static void config_string(int step, long fs, const char *key, const char *value) {
  coop_check(step, SYS5(__NR_fsconfig, fs, FSCONFIG_SET_STRING, key, value, 0));
}

/* A detached overlay mount (nosuid, nodev) of host paths seen under /oldroot.
 *
 * "volatile": no sync of the upper file system, ever. Without it the unmount when the sandbox
 * ends syncs the upper's whole file system on exec()'s path (the pid namespace's last exit waits
 * for it); the gateway syncs it after the result instead (src/sandbox/upper_sync.ts). A volatile
 * mount leaves work/incompat/volatile in its work directory, and the kernel refuses to mount over
 * that again: each sandbox gets a fresh work directory (src/sandbox/overlay_workdir.ts), never
 * visible inside a sandbox. */
static long overlay_tree(int step, const char *lower, const char *upper, const char *work) {
  char path[COOP_PATH_MAX];
  long fs = coop_check(step, SYS2(__NR_fsopen, "overlay", FSOPEN_CLOEXEC));
  coop_check(step, coop_join(path, "/oldroot", lower));
  config_string(step, fs, "lowerdir+", path);
  coop_check(step, coop_join(path, "/oldroot", upper));
  config_string(step, fs, "upperdir", path);
  coop_check(step, coop_join(path, "/oldroot", work));
  config_string(step, fs, "workdir", path);
  coop_check(step, SYS5(__NR_fsconfig, fs, FSCONFIG_SET_FLAG, "userxattr", 0, 0));
  config_string(step, fs, "redirect_dir", "nofollow");
  config_string(step, fs, "metacopy", "off");
  config_string(step, fs, "index", "off");
  coop_check(step, SYS5(__NR_fsconfig, fs, FSCONFIG_SET_FLAG, "volatile", 0, 0));
  coop_check(step, SYS5(__NR_fsconfig, fs, FSCONFIG_CMD_CREATE, 0, 0, 0));
  long tree = coop_check(step, SYS3(__NR_fsmount, fs, FSMOUNT_CLOEXEC,
                                    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV));
  SYS1(__NR_close, fs);
  return tree;
}

/* A host directory as a detached tree (nosuid, nodev), opened refusing every symlink. */
static long host_tree(int step, const char *host) {
  char path[COOP_PATH_MAX];
  coop_check(step, coop_join(path, "/oldroot", host));
  long tree = coop_check(step, coop_workspace_tree(path));
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
  coop_check(step, SYS5(__NR_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr,
                        sizeof attr));
  return tree;
}

static void attach(int step, long tree, const char *target) {
  coop_check(step, coop_make_dirs(target));
  coop_check(step, SYS5(__NR_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH));
  SYS1(__NR_close, tree);
}

static int own_name(const char *name) {
  for (int i = 0; own_names[i]; i++)
    if (coop_streq(name, own_names[i])) return 1;
  return 0;
}

struct dirent64 {
  unsigned long ino;
  long off;
  unsigned short reclen;
  unsigned char type;
  char name[];
};

/* One top-level entry of the staged image: a directory is bound at /name read-write, a
 * symlink is made again in the tmpfs root (never followed here), anything else is left out. */
static void take_entry(int step, long root, const char *name) {
  char inside[COOP_PATH_MAX];
  coop_check(step, coop_join(inside, "/", name));
  struct open_how how = {
      .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
      .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS,
  };
  long dir = SYS4(__NR_openat2, root, name, &how, sizeof how);
  if (dir == -ENOTDIR) return;
  if (dir == -ELOOP) {
    char target[COOP_PATH_MAX];
    long n = coop_check(step, SYS4(__NR_readlinkat, root, name, target, sizeof target - 1));
    target[n] = 0;
    coop_check(step, SYS3(__NR_symlinkat, target, AT_FDCWD, inside));
    return;
  }
  coop_check(step, dir);
  long tree = coop_check(step, SYS3(__NR_open_tree, dir, "",
                                    OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
                                        AT_EMPTY_PATH));
  SYS1(__NR_close, dir);
  attach(step, tree, inside);
  add_writable(step, inside);
}

/* Attaches the detached `tree` where its entries can be read and returns its root opened
 * for reading: at `host_stage` when given — a directory below /oldroot (the sandbox's own fresh
 * overlay work directory, made by the gateway without a symlink on its path, and opened here
 * refusing every symlink) — else at STAGING on the tmpfs root.
 *
 * Staged below /oldroot, the tree leaves with the one detach of /oldroot every sandbox does
 * anyway. At STAGING it needs a detach of its own, and each detach that frees a mount waits
 * for an expedited RCU grace period (synchronize_rcu_expedited in namespace_unlock): about
 * 0.1 ms on an idle machine, 1 – 2 ms on a loaded one (docs/performance.md, session 14). */
static long stage_tree(int step, long tree, const char *host_stage) {
  if (!host_stage) {
    attach(step, tree, STAGING);
    return coop_check(step, SYS4(__NR_openat, AT_FDCWD, STAGING,
                                 O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0));
  }
  struct open_how how = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                         .resolve = RESOLVE_NO_SYMLINKS};
  long at = coop_check(step, SYS4(__NR_openat2, AT_FDCWD, host_stage, &how, sizeof how));
  coop_check(step, SYS5(__NR_move_mount, tree, "", at, "",
                        MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
  SYS1(__NR_close, at);
  /* The tree's own fd names its root, mounted now (`at` is the directory underneath it). */
  long root = SYS4(__NR_openat, tree, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
  SYS1(__NR_close, tree);
  return coop_check(step, root);
}

/* Binds each top-level directory of the image at `root` (open for reading) onto the tmpfs
 * root, then closes it. */
static void bind_entries(int step, long root) {
  static char buf[8192];
  for (;;) {
    long n = coop_check(step, SYS3(__NR_getdents64, root, buf, sizeof buf));
    if (n == 0) break;
    for (long off = 0; off < n;) {
      struct dirent64 *entry = (struct dirent64 *)(buf + off);
      off += entry->reclen;
      if (!own_name(entry->name)) take_entry(step, root, entry->name);
    }
  }
  SYS1(__NR_close, root);
}

/* Binds each top-level directory of `tree` (detached) onto the tmpfs root; `host_stage` as
 * for stage_tree. */
static void bind_top_level(int step, long tree, const char *host_stage) {
  bind_entries(step, stage_tree(step, tree, host_stage));
  if (host_stage) return;
  coop_check(step, SYS2(__NR_umount2, STAGING, 2 /* MNT_DETACH */));
  coop_check(step, SYS3(__NR_unlinkat, AT_FDCWD, STAGING, AT_REMOVEDIR));
}

/* Hands a copy of the fresh overlay `tree` to the gateway on the go socket, to be given to the
 * next sandboxes of this upper (src/sandbox/held_overlay.ts), when this kernel lets a mount be
 * cloned out of a detached tree (Linux 6.15 and later); returns whether it did. Failing to send
 * only costs the next sandbox a mount of its own. */
static int send_overlay_back(long tree) {
  long probe = SYS3(__NR_open_tree, tree, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
  if (probe < 0) return 0;
  SYS1(__NR_close, probe);
  char byte = 'o';
  struct coop_iovec iov = {&byte, 1};
  struct coop_cmsg_fds cmsg = {COOP_CMSG_HEADER + sizeof(int), COOP_SOL_SOCKET, COOP_SCM_RIGHTS,
                               {(int)tree, -1, -1}};
  /* Room for one descriptor, aligned as CMSG_SPACE(sizeof(int)) is. */
  struct coop_msghdr msg = {0, 0, &iov, 1, &cmsg, COOP_CMSG_HEADER + 8, 0};
  return SYS3(__NR_sendmsg, COOP_FD_GO, &msg, COOP_MSG_NOSIGNAL | COOP_MSG_DONTWAIT) == 1;
}

/* The image of a detached overlay `tree` that stays detached (held by the gateway): its
 * top-level directories cloned out of it one by one, or all of it at `target`. */
static void clone_from_held(int step, long tree, const char *target) {
  if (coop_streq(target, "/")) {
    bind_entries(step, coop_check(step, SYS4(__NR_openat, tree, ".",
                                             O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0)));
    return;
  }
  attach(step,
         coop_check(step, SYS3(__NR_open_tree, tree, "",
                               OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH)),
         target);
  add_writable(step, target);
}

static void mount_root_layers(const struct coop_spec *spec) {
  const int step = COOP_STEP_ROOT_LAYERS;
  if (!spec->overlay_count && !spec->dir_root && !spec->persist_count) return;
  coop_step(spec, COOP_STEP_ROOT_LAYERS);
  for (int i = 0; i < spec->overlay_count; i++) {
    /* The first overlay may be one the gateway holds, or go back to it to be held. */
    if (i == 0 && spec->held_fd >= 0) {
      clone_from_held(step, spec->held_fd, spec->overlays[i].target);
      continue;
    }
    long tree = overlay_tree(step, spec->overlays[i].lower, spec->overlays[i].upper,
                             spec->overlays[i].work);
    if (i == 0 && spec->hold && send_overlay_back(tree)) {
      clone_from_held(step, tree, spec->overlays[i].target);
      SYS1(__NR_close, tree);
      continue;
    }
    if (coop_streq(spec->overlays[i].target, "/")) {
      char stage[COOP_PATH_MAX];
      coop_check(step, coop_join(stage, "/oldroot", spec->overlays[i].work));
      bind_top_level(step, tree, stage);
    } else {
      attach(step, tree, spec->overlays[i].target);
      add_writable(step, spec->overlays[i].target);
    }
  }
  if (spec->dir_root) bind_top_level(step, host_tree(step, spec->dir_root), 0);
  for (int i = 0; i < spec->persist_count; i++)
    persist_trees[i] = (int)host_tree(COOP_STEP_PERSIST, spec->persists[i].a);
}

void coop_mount_root_layers(const struct coop_spec *spec) {
  mount_root_layers(spec);
  /* Nothing of the gateway's stays with the sandbox: the held overlay, and (outside a session,
   * whose commands come on it) the go socket a fresh one went back on (main.c). */
  if (spec->held_fd >= 0) SYS1(__NR_close, spec->held_fd);
  if (spec->hold && !spec->session) SYS1(__NR_close, COOP_FD_GO);
}

void coop_stage_files(const struct coop_spec *spec) {
  char staged[COOP_PATH_MAX], num[24];
  for (int i = 0; i < spec->file_count; i++) {
    coop_ulong_to_str((unsigned long)i, num);
    coop_check(COOP_STEP_WRITE_ETC, coop_join(staged, STAGED_FILES "/", num));
    coop_check(COOP_STEP_WRITE_ETC, coop_make_file(staged, spec->files[i].b));
  }
}

void coop_finish_root_layers(const struct coop_spec *spec) {
  const int step = COOP_STEP_PERSIST;
  if (!spec->persist_count && !coop_image_root(spec)) return;
  coop_step(spec, COOP_STEP_PERSIST);
  if (coop_image_root(spec)) {
    char staged[COOP_PATH_MAX], num[24];
    struct mount_attr ro = {
        .attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    for (int i = 0; i < spec->file_count; i++) {
      coop_ulong_to_str((unsigned long)i, num);
      coop_check(step, coop_join(staged, STAGED_FILES "/", num));
      const char *target = spec->files[i].a;
      /* Made when the image lacks it (an empty file, in the upper): the mount needs a file.
       * Looked up with O_PATH first: opening an image's file for writing would copy it up. A
       * path the user turned into a symlink is theirs: left alone, it resolves inside. */
      struct open_how nofollow = {.flags = O_PATH | O_CLOEXEC, .resolve = RESOLVE_NO_SYMLINKS};
      long fd = SYS4(__NR_openat2, AT_FDCWD, target, &nofollow, sizeof nofollow);
      if (fd == -ELOOP) {
        SYS3(__NR_unlinkat, AT_FDCWD, staged, 0);
        continue;
      }
      if (fd == -ENOENT)
        fd = SYS4(__NR_openat, AT_FDCWD, target,
                  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd == -ENOENT) { /* no such directory in this image (no apt): nothing to configure */
        SYS3(__NR_unlinkat, AT_FDCWD, staged, 0);
        continue;
      }
      SYS1(__NR_close, coop_check(step, fd));
      long tree = coop_check(step, SYS3(__NR_open_tree, AT_FDCWD, staged,
                                        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
      coop_check(step, SYS5(__NR_mount_setattr, tree, "", AT_EMPTY_PATH, &ro, sizeof ro));
      coop_check(step,
                 SYS5(__NR_move_mount, tree, "", AT_FDCWD, target, MOVE_MOUNT_F_EMPTY_PATH));
      SYS1(__NR_close, tree);
      coop_check(step, SYS3(__NR_unlinkat, AT_FDCWD, staged, 0));
    }
    if (spec->file_count)
      coop_check(step, SYS3(__NR_unlinkat, AT_FDCWD, STAGED_FILES, AT_REMOVEDIR));
  }
  /* A persist target is opened refusing symlinks (ELOOP): bound through a link the user
   * planted, it would shadow wherever the link leads inside. */
  struct open_how dir_nofollow = {.flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
                                  .resolve = RESOLVE_NO_SYMLINKS};
  for (int i = 0; i < spec->persist_count; i++) {
    coop_check(step, coop_make_dirs(spec->persists[i].b));
    long target = coop_check(
        step, SYS4(__NR_openat2, AT_FDCWD, spec->persists[i].b, &dir_nofollow, sizeof dir_nofollow));
    coop_check(step, SYS5(__NR_move_mount, persist_trees[i], "", target, "",
                          MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH));
    SYS1(__NR_close, target);
    SYS1(__NR_close, persist_trees[i]);
    add_writable(step, spec->persists[i].b);
  }
}
