/* Discarding a flood without copying it: once a command's output passes its cap, the gateway
 * keeps the pipe drained (so the command runs on, as it would with a terminal) but moves the
 * bytes to /dev/null inside the kernel instead of allocating a buffer per chunk in JS. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

/* A close-on-exec duplicate of pipe fd, for the drain to own (the JS socket closes the
 * original). The pipe grows to 1 MiB (the unprivileged maximum) so that each poll of the drain
 * moves more: the writer then blocks less often between polls. */
int coop_dup(int fd) {
  int copy = fcntl(fd, F_DUPFD_CLOEXEC, 0);
  if (copy < 0) return -errno;
  fcntl(copy, F_SETPIPE_SZ, 1 << 20);
  return copy;
}

/* Discards what is pending on pipe fd, up to max bytes. Returns the bytes discarded (> 0), 0 at
 * end of stream, -EAGAIN when nothing is pending, or another -errno. Never blocks. */
long coop_drain(int fd, long max) {
  static int devnull = -1;
  if (devnull < 0) {
    int fresh = open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (fresh < 0) return -errno;
    int expected = -1;
    if (!__atomic_compare_exchange_n(&devnull, &expected, fresh, 0, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      close(fresh);
  }
  long total = 0;
  while (total < max) {
    ssize_t n = splice(fd, NULL, devnull, NULL, 1 << 20, SPLICE_F_NONBLOCK);
    if (n > 0) {
      total += n;
      continue;
    }
    if (n == 0) return total; /* end of stream; the next call returns 0 */
    if (errno == EINTR) continue;
    if (errno == EAGAIN) return total ? total : -EAGAIN;
    return -errno;
  }
  return total;
}
