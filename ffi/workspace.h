/* The workspace as a detached mount tree, opened without following any symlink; used by the
 * gateway (root invokers, ffi/spawn.c) and by the init (everyone else, ffi/init/mounts.c).
 *
 * The workspace path can lead through directories a sandbox writes (a shared workspace holds
 * the per-user ones), so a sandbox can swap a component for a symlink to /etc while another
 * sandbox is being set up (CVE-2021-30465, runc). openat2(RESOLVE_NO_SYMLINKS) refuses a
 * symlink anywhere in the path with ELOOP, atomically; open_tree then clones exactly the
 * directory that was opened, and move_mount attaches that tree by fd: no path is resolved
 * twice. The includer provides O_* and AT_* (glibc's <fcntl.h> or <linux/fcntl.h>). */
#ifndef COOP_WORKSPACE_H
#define COOP_WORKSPACE_H

#include <linux/mount.h>
#include <linux/openat2.h>

#include "sys.h"

/* Returns the detached tree (close-on-exec) or -errno: -ELOOP when the path holds a symlink. */
static inline long coop_workspace_tree(const char *path) {
  struct open_how how = {
      .flags = O_PATH | O_DIRECTORY | O_CLOEXEC,
      .resolve = RESOLVE_NO_SYMLINKS,
  };
  long dir = SYS4(__NR_openat2, AT_FDCWD, path, &how, sizeof how);
  if (dir < 0) return dir;
  long tree = SYS3(__NR_open_tree, dir, "",
                   OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_EMPTY_PATH);
  SYS1(__NR_close, dir);
  return tree;
}

#endif
