/* Writes an environment's upper layer to disk (src/sandbox/upper_sync.ts). Its overlay is mounted
 * "volatile" (ffi/init/rootfs.c), so neither the unmount nor an fsync inside the sandbox reaches
 * the disk; the gateway calls this on a worker thread once the sandbox has ended. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <unistd.h>

/* syncfs(2) of the file system holding directory `path` (not followed if a symlink).
 * Returns 0 or -errno. */
int32_t coop_syncfs(const char *path) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return -errno;
  int32_t result = syncfs(fd) == 0 ? 0 : -errno;
  close(fd);
  return result;
}
