/* The parent side of the cgroup v1 limits path: places a new sandbox's init in the cgroups
 * the gateway prepared (src/sandbox/cgroup_v1.ts creates them and writes their limits).
 *
 * It runs in coop_start before the go byte: the init is still blocked in recvmsg then, so no
 * process of the sandbox ever runs outside its cgroups, and everything
 * the command forks inherits them. The init's cgroup namespace was made at clone, rooted at
 * the gateway's cgroup, so inside /proc/self/cgroup shows only the sandbox's own leaf. */
#define _GNU_SOURCE
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int write_pid(const char *dir, pid_t pid) {
  char path[4096], text[16];
  if (snprintf(path, sizeof path, "%s/cgroup.procs", dir) >= (int)sizeof path) return -ENAMETOOLONG;
  int len = snprintf(text, sizeof text, "%d\n", (int)pid);
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  ssize_t n;
  // A pending signal may interrupt a cgroup write (EINTR); nothing was written: try again.
  do n = write(fd, text, (size_t)len);
  while (n < 0 && errno == EINTR);
  int err = n < 0 ? errno : n != len ? EIO : 0;
  close(fd);
  return -err;
}

int coop_cgroup_attach(pid_t pid, const char *dirs) {
  for (const char *dir = dirs; *dir; dir += strlen(dir) + 1) {
    int r = write_pid(dir, pid);
    if (r) return r;
  }
  return 0;
}
