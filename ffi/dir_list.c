/* A bounded directory listing for the gateway's event loop (src/sandbox/protected_paths.ts).
 *
 * A sandbox decides how many entries its workspace's top has; listing 800,000 of them on the
 * event loop stalled every other user (ATTACKS R12). This reads at most one caller-sized
 * buffer of getdents64 records, never the whole directory: a listing that does not fit is
 * answered -E2BIG and the caller moves the work to a worker thread. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Fills buf with the linux_dirent64 records of path's entries ("." and ".." included).
 * Returns the bytes used when the whole directory fit, -E2BIG when it did not, or -errno. */
int64_t coop_list_dir(const char *path, uint8_t *buf, int64_t len) {
  int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return -errno;
  long used = syscall(SYS_getdents64, fd, buf, (size_t)len);
  int64_t result = used < 0 ? -errno : used;
  if (used > 0) {
    /* One more call says whether anything is left. The probe holds one record of the
     * longest name (19 + 256 bytes, aligned); a record that does not fit is EINVAL: more. */
    uint8_t probe[288];
    long more = syscall(SYS_getdents64, fd, probe, sizeof probe);
    if (more != 0) result = -E2BIG;
  }
  close(fd);
  return result;
}
