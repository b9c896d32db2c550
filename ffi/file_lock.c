/* One holder at a time for an environment's upper layer, across processes (src/sandbox/upper_lock.ts):
 * overlayfs gives undefined results when one upper directory is in two mounts at once, and with
 * index=off the kernel only warns. The lock is a flock(2) on a file beside the upper, taken
 * without waiting (the caller polls off the event loop) and held until the sandbox has ended. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

/* Opens (creating 0600, never through a symlink) and locks the file at `path`; on success writes
 * `holder` (at most 64 bytes, fixed width so that it overwrites the last one) at its start for
 * whoever finds it locked next, and sets *changed (when not NULL) to whether the last holder was
 * someone else. Returns the descriptor that holds the lock (close it to release), -EWOULDBLOCK
 * when another open file holds it, or another -errno. */
int32_t coop_lock_file(const char *path, const char *holder, int64_t holder_len, int32_t *changed) {
  int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    int error = errno;
    close(fd);
    return -error;
  }
  /* Advisory text only: a failure to write it loses the name in a message, never the lock.
   * Written in place, and only when it changed: the same process locks the same upper command
   * after command, and a write (or a truncate, whose freed block a `discard` mount waits for)
   * per command would be disk work on exec()'s path for nothing. */
  char current[64];
  int other = 1;
  if (holder_len > 0 && holder_len <= (int64_t)sizeof current) {
    ssize_t got = pread(fd, current, (size_t)holder_len, 0);
    other = got != holder_len || memcmp(current, holder, (size_t)holder_len) != 0;
    if (other) {
      ssize_t written = pwrite(fd, holder, (size_t)holder_len, 0);
      (void)written;
    }
  }
  if (changed) *changed = other;
  return fd;
}
